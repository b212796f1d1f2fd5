"""The demo producer: realistic game events, serialized exactly as real producers do."""
