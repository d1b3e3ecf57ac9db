"""Drawing a 3D flock through a camera (docs/optics.md): the camera's pose (camera.py), birds
projected to streaks with their silhouettes' ink (streaks.py), the sky and ground (sky.py)
and the optics that composite them in linear light (optics.py). `types.py` holds the two
values they pass along."""
