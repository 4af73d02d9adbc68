"""The words benchy writes about a run and its results, rendered from the codes, enums and numbers that ``core`` and
``session`` hand over (no torch): number formats (:mod:`.numbers`), the reports' lines (:mod:`.reports`), the
verdict (:mod:`.verdict`), what a run says as it goes (:mod:`.run`) and the exit statuses (:mod:`.exits`). A value
that says itself keeps its words beside it in ``core``; a configuration key's words are declared with the key
(:mod:`benchy.core.config_rules`). The summary lines, the terminal, the JSON, Markdown and HTML render the same
values through these functions.
"""
