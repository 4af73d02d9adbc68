"""Every sentence benchy writes, in one place: rendered from the codes, enums and numbers that ``core`` and
``session`` hand over (no torch); those two build none (``tests/test_layout.py``), and no code reads one back. The
summary lines, the terminal, the JSON's words, Markdown and HTML render the same values through these functions.

* :mod:`.numbers`: the number formatters every renderer uses (ratios, rates, FLOPs, ranges);
* :mod:`.reports`: the reports' lines (COMPUTE, TOKENS, ENERGY, PARTS, STARTUP, FIRST_PASS, WHATIF, a sweep's
  settings, the stage trials' advice);
* :mod:`.verdict`: the verdict and the claims and advice the other measurements add to it;
* :mod:`.run`: what a run says as it goes (its events, the start-up lines, an early end, the schedule and why it
  stopped);
* :mod:`.why`: why a trial did not count, a side did not run or the FLOPs were not counted;
* :mod:`.exits`: the exit statuses.

A configuration key's words (what it allows, what it does) are declared with the key itself, in
:mod:`benchy.core.config_rules`.
"""
