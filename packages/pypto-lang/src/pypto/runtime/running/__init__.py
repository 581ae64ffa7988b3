"""Running compiled programs: dispatch, the harness (goldens), what a run writes."""
