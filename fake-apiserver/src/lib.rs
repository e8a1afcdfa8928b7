//! A fake Kubernetes API server for tests. Work in progress.
#![forbid(unsafe_code)]
