"""One benchmark: the epoch state machine, side trials, the endings, the sink, the planner, the registry."""
