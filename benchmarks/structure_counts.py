"""The structure numbers of issue 50, read from the source tree as text and syntax (nothing runs):

on_hosts        references to ``.on_hosts`` outside cluster/ and hosts/ (a branch on where the cluster runs)
site_probes     getattr/hasattr/isinstance calls outside cluster/ and hosts/ whose first argument is the cluster
                (an expression naming ``cluster``, ``site`` or ``.nodes``)
any_cluster     parameters and names called ``cluster`` annotated ``Any``
long_lines      lines over 120 and over 100 characters, of all lines
wide_functions  functions taking 8 or more parameters
linted          the modules ``ruff check`` lists, of all modules
rooms           modules per folder of src/failsafe (``__init__.py`` not counted): the largest six

python benchmarks/structure_counts.py [--tree DIR] [--label NAME] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE_DIRS = ("cluster", "hosts")
SITE_NAMES = ("cluster", "site", ".nodes")


def _outside_site(path: Path, package: Path) -> bool:
    parts = path.relative_to(package).parts
    return not parts or parts[0] not in SITE_DIRS


def _is_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and ast.unparse(annotation).strip("'\"") in ("Any", "typing.Any")


def count(tree: Path) -> dict:
    package = tree / "src" / "failsafe"
    modules = sorted(package.rglob("*.py"))
    on_hosts: list[str] = []
    probes: list[str] = []
    any_cluster: list[str] = []
    wide: list[str] = []
    lines = over_100 = over_120 = 0
    for path in modules:
        text = path.read_text()
        rel = str(path.relative_to(tree))
        for line in text.splitlines():
            lines += 1
            over_100 += len(line) > 100
            over_120 += len(line) > 120
        syntax = ast.parse(text)
        outside = _outside_site(path, package)
        for node in ast.walk(syntax):
            if outside and isinstance(node, ast.Attribute) and node.attr == "on_hosts":
                on_hosts.append(f"{rel}:{node.lineno}")
            if (
                outside
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "isinstance")
                and node.args
                and any(name in ast.unparse(node.args[0]) for name in SITE_NAMES)
            ):
                probes.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.arg) and node.arg == "cluster" and _is_any(node.annotation):
                any_cluster.append(f"{rel}:{node.lineno}")
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "cluster"
                and _is_any(node.annotation)
            ):
                any_cluster.append(f"{rel}:{node.lineno}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                n = (
                    len(a.posonlyargs)
                    + len(a.args)
                    + len(a.kwonlyargs)
                    - (1 if a.args and a.args[0].arg in ("self", "cls") else 0)
                )
                if n >= 8:
                    wide.append(f"{rel}:{node.lineno} {node.name} ({n})")
    # A probe nested in another (getattr(getattr(cluster, ...), ...)) is one place.
    probes = sorted(set(probes), key=lambda p: (p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])))
    return {
        "on_hosts": {"count": len(on_hosts), "where": on_hosts},
        "site_probes": {"count": len(probes), "where": probes},
        "any_cluster": {"count": len(any_cluster), "where": any_cluster},
        "long_lines": {"lines": lines, "over_100": over_100, "over_120": over_120},
        "wide_functions": {"count": len(wide), "where": wide},
        "linted": {"modules": len(modules), "checked": _linted(tree)},
        "rooms": _rooms(package, modules),
    }


def _rooms(package: Path, modules: list[Path]) -> dict:
    sizes: dict[str, int] = {}
    for path in modules:
        if path.name != "__init__.py":
            folder = str(path.parent.relative_to(package)) + "/"
            sizes[folder] = sizes.get(folder, 0) + 1
    largest = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:6]
    return {"folders": len(sizes), "largest": {folder: n for folder, n in largest}}


def _linted(tree: Path) -> int | None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        return None
    done = subprocess.run([ruff, "check", "--show-files", "src"], cwd=tree, capture_output=True, text=True, timeout=300)
    return sum(1 for line in done.stdout.splitlines() if line.strip().endswith(".py"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=ROOT, help="a checkout (default: this one)")
    parser.add_argument("--label", default="now")
    parser.add_argument("--out", type=Path, help="merge into this JSON file under the label")
    args = parser.parse_args()
    counts = count(args.tree.resolve())
    if args.out is None:
        json.dump(counts, sys.stdout, indent=1)
        print()
        return
    data = (
        json.loads(args.out.read_text())
        if args.out.exists()
        else {"command": "benchmarks/structure_counts.py (see its docstring)", "by_label": {}}
    )
    data["by_label"][args.label] = counts
    args.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
