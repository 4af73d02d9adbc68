"""How a script meets benchy: the wrappers, the --enable_benchy helper and the zero-edit runner."""

import os

# The directory ``benchy run -- COMMAND`` puts first on PYTHONPATH: its sitecustomize patches DataLoader.
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot")
