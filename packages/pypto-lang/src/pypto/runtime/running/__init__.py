"""Running compiled programs: ``ChipWorker`` and ``DeviceTensor`` (explicit dispatch), the
compile-run-compare harness (``runner``, goldens) and the runtime's ring sizing."""
