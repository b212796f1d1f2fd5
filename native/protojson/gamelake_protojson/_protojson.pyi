class Renderer:
    """Renders payloads of one message type as their canonical proto3 JSON text."""

    def __init__(self, file_descriptor_set: bytes, message_name: str) -> None: ...
    def render(self, payloads: list[bytes]) -> list[str]:
        """Raises ValueError naming the first payload that cannot be rendered."""
        ...
