"""The words benchy writes about a run and its results, rendered from the codes, enums and numbers that ``core`` and
``session`` hand over (no torch); the summary lines, the terminal, the JSON, Markdown and HTML all render through
these functions.
"""
