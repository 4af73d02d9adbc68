"""The words benchy writes about a run and its results, rendered from the codes, enums and numbers that ``core`` and
``session`` hand over (no torch). A value that says itself keeps its words beside it in ``core`` (an event, a
``Reason`` through its ``Why``, a ``Help``, why measuring stopped, a sweep's ``Setting``); ``session`` builds none
(``tests/test_layout.py``), and no code reads one back. The summary lines, the terminal, the JSON's words, Markdown
and HTML render the same values through these functions.

* :mod:`.numbers`: the number formatters every renderer uses (ratios, rates, FLOPs, ranges);
* :mod:`.reports`: the reports' lines (COMPUTE, TOKENS, ENERGY, PARTS, STARTUP, FIRST_PASS, WHATIF, the stage
  trials' advice);
* :mod:`.verdict`: the verdict and the claims and advice the other measurements add to it;
* :mod:`.run`: what a run says as it goes (the start-up lines, the schedule, an early end, the lines around the
  summary);
* :mod:`.exits`: the exit statuses.

A configuration key's words (what it allows, what it does) are declared with the key itself, in
:mod:`benchy.core.config_rules`.
"""
