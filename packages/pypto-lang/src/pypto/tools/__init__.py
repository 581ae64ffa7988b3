"""Views for tuning a kernel on evidence: the task graph a run built (``deps_graph``, shown by
``pypto deps view``) and each kernel's on-chip memory by address and lifetime (``memory_map``,
``python -m pypto.tools.memory_map``). Each writes self-contained HTML: nothing is fetched."""
