"""Pure core: configuration, schedule, results, statistics and the verdict. No torch, no printing, no files."""
