"""How packs add sub-commands to ``tether``: each installed pack declares them under the
``tether.commands`` entry-point group, and the command line asks for them here. Light on purpose
(the standard library only), so ``tether --help`` stays quick; packs see it as
``tether.pack.add_pack_commands``."""

from __future__ import annotations

import importlib.metadata
from typing import Any

GROUP = "tether.commands"


def add_pack_commands(sub: Any) -> list[str]:
    """Let every installed pack add its sub-commands to ``tether``'s (an argparse sub-parsers
    action). A pack declares ``[project.entry-points."tether.commands"] name = "module:add_commands"``;
    ``add_commands(sub)`` adds parsers whose ``fn`` default takes the parsed arguments and returns
    the exit code. The modules load whenever the command line is built, so they import their heavy
    parts inside the commands. -> the entry points' names, in the order they were added."""
    names = []
    for entry in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        entry.load()(sub)
        names.append(entry.name)
    return names
