"""The offline image builder: lockchaos's own container images from Debian packages
(docs/images.md). A tool, not the runtime: a run only names the images
(``chaos.topology.images``); this builds them.

Each one is a ``debootstrap --variant=minbase`` root file system of a Debian suite, imported
with ``docker import`` under lockchaos's own name (``recipes``: what each image is made of;
``debian``: the mirror; ``build``: the steps). Every image carries the labels
``org.lockchaos.image=1``, ``org.lockchaos.name=<name>`` and ``org.lockchaos.recipe=<hash of
its recipe>``; ``build`` skips an image whose recipe hash matches, so building is idempotent,
and one whose build failed before with the same recipe hash (``failures``) until asked to
retry.
Building needs root (debootstrap, chroot), a Docker engine, the Debian mirror apt uses,
``dpkg-source``, ``make`` and a C/C++ compiler.

``python -m chaos.images [build|present|missing] [--force|--retry] [--source DIR] [NAME…]``
is what ``scripts/docker-setup.sh`` runs (and ``lockchaos setup --docker``, for the images a
run needs).
"""
