"""boids-render: offline film-quality flock renderer."""
__version__ = "0.1.0"
