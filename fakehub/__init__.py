"""fakehub: a local replica of the GitHub Actions REST API with a simulated verl CI history."""

from fakehub.server import DEFAULT_SCALE, Hub, running

__all__ = ["DEFAULT_SCALE", "Hub", "running"]
