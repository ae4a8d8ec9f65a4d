"""Runtime: streaming controllers by name (baselines, ONNX, plugins), the runner, parallel runs, the compute bench."""
