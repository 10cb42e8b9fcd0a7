"""The warm worker: one long-lived process per user and install that keeps the modules, the ONNX session and the
guard's tables loaded, runs whole hooks and embeddings for fresh processes over a private Unix socket, and is
never required (every caller does the work itself when the worker is absent, starting, busy, wedged or stale).

`protocol` (wire format, paths, version key), `client` (the hook's and the embedder's side, light imports),
`lifecycle` (start detached, stop, status), `server` (the worker itself).
"""
