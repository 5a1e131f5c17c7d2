"""fakehub: a local replica of the GitHub Actions REST API with simulated CI histories of verl
(verl-project/verl) and of a much smaller recipes repository (verl-project/verl-recipe)."""

from fakehub.server import DEFAULT_SCALE, Hub, running

__all__ = ["DEFAULT_SCALE", "Hub", "running"]
