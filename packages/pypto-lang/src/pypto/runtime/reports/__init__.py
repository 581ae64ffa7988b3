"""What a run leaves to read: profiles and the swimlane, the timeline's views (PMU counters,
scope statistics, the memory map), the record of launches and the live progress bar."""
