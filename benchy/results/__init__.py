"""Formats and files, no torch: the BENCHY:: line grammar, the JSON schema, atomic files, saved runs,
compare, scaling, tables, plots and log parsing."""
