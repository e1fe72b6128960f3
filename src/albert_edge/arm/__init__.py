"""ARM kernels in the loop before a phone: our runtime under qemu-aarch64.

``setup_env`` builds the emulation environment from the registries, ``cpus`` describes the
emulated CPU models (and refuses the ones known to give wrong results), ``guest`` is what runs
inside the emulator, ``check`` drives it from the host and ``report`` writes JSON + Markdown.
"""
