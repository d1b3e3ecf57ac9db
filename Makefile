# Two commands from a fresh Debian/Ubuntu machine: `make render` and `make test`.
# Both create .venv, install what building pycairo needs (via apt when missing),
# install the package with its test extras at the versions constraints.txt pins, then
# do their job.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SCENE  ?= scenes/murmuration.toml
APT_PACKAGES := build-essential pkg-config libcairo2-dev python3-dev python3-venv

# The browser tests/test_web.py plays the web preset's page in.
BROWSER_PACKAGE := chromium-headless-shell

.PHONY: render test system-deps browser clean bench

render: $(STAMP)
	$(BIN)/boids-render $(SCENE) -o out/murmuration.mp4

test: $(STAMP) browser
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/run

# The install ends by compiling the kernels (the simulation's and the drawing's, 3D and 2D)
# on 50-bird, 1-frame renders of the two default scenes: about a minute once (a warm start
# is 2 s), cached in the folder the console script and the tests share
# (render/sim/cache.py), so the first real render's progress bar is honest.
$(STAMP): pyproject.toml constraints.txt | system-deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	@echo "Compiling the simulation kernels (once)"
	for scene in scenes/murmuration.toml scenes/plate.toml; do \
	  $(BIN)/boids-render $$scene --set flock.count=50 --frames 1 --size 64x36 --quiet \
	    -o $(VENV)/warm-up/f_%d.png || exit 1; done
	rm -rf $(VENV)/warm-up
	touch $(STAMP)

# pycairo ships only as source: it needs a C compiler, pkg-config, cairo's and
# Python's headers; `python -m venv` needs ensurepip (python3-venv on Debian).
system-deps:
	@if command -v cc >/dev/null 2>&1 \
	   && pkg-config --exists cairo 2>/dev/null \
	   && $(PYTHON) -c 'import ensurepip, sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then \
	  exit 0; \
	fi; \
	echo "Installing system packages for pycairo: $(APT_PACKAGES)"; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	else echo "error: need root or sudo to install: $(APT_PACKAGES)" >&2; \
	     echo "       install them by hand, then run make again" >&2; exit 1; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "error: apt-get not found; install a C compiler, pkg-config, cairo headers and Python headers" >&2; \
	  exit 1; fi; \
	$$SUDO apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES) >/dev/null

# A headless Chromium for the browser test, installed when missing (as root or via sudo):
# Debian's headless shell, or its full chromium in a release without that package.
# Without apt, root or sudo, quietly nothing: the test then skips, saying why.
browser:
	@if command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 \
	   || ! command -v apt-get >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; \
	else exit 0; fi; \
	$$SUDO apt-get update -qq >/dev/null 2>&1; \
	PKG=$(BROWSER_PACKAGE); \
	apt-cache policy $$PKG 2>/dev/null | grep -q 'Candidate: [0-9]' || PKG=chromium; \
	echo "Installing $$PKG for the browser test"; \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$PKG >/dev/null 2>&1 \
	  || echo "note: could not install $$PKG; the browser test will skip"

clean:
	rm -rf $(VENV) out/* build *.egg-info
