"""The drawing: cairo surfaces over numpy arrays, the 2D streaks and paths, vector pages.
Imports no cairo here: the budget reads its limit before anything is drawn."""

# cairo's image surfaces are at most this many px a side: each frame of a clip or PNG
# sequence, a still drawn whole, a contact sheet. A PNG still may be larger: it is drawn in
# tiles, each its own surface (stills.render_still).
IMAGE_MAX_SIDE = 32767
