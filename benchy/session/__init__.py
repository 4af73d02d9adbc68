"""One benchmark: the epoch state machine, side trials, lifecycle, the sink, the planner, the registry."""
