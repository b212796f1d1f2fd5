"""Protobuf messages -> their canonical proto3 JSON text, in Rust (src/lib.rs)."""

from gamelake_protojson._protojson import Renderer

__all__ = ["Renderer"]
