"""Imports run one way: replays (the rules engines) <- ingest.storage <- analysis <- dashboard
<- ingest.server (HTTP, judging, the jobs schedule, the process) <- ingest.cli (the command
line). Each layer is a package, found by its name: every module is in exactly one. Read from
the source (every import statement, function-level ones included), so a new upward import
fails here before it becomes a cycle; and no package is found by a name in a string."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("replays", "ingest", "analysis", "dashboard")

# the layers, bottom first: each may import the layers before it and itself
LAYERS = ("replays", "ingest.storage", "analysis", "dashboard", "ingest.server", "ingest.cli")
ALLOWED = {name: set(LAYERS[: i + 1]) for i, name in enumerate(LAYERS)}
# `ingest` itself is only the folder of its three layers: its __init__ imports nothing
ALLOWED["ingest"] = set()


def layer(module: str) -> str | None:
    """The layer package `module` is in (by its dotted name), `ingest` for the bare package,
    None outside the project."""
    for name in LAYERS:
        if module == name or module.startswith(name + "."):
            return name
    return module if module == "ingest" else None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, here: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, relative ones resolved; `here`,
    the module it is (by default its place in the checkout)."""
    here = here or module_name(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # each name, as `target.name`: `from ingest import storage` is ingest.storage
            out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return out


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_one_way(path):
    mine = layer(module_name(path))
    wrong = [
        f"line {line}: {target}"
        for line, target in imported(path)
        if (theirs := layer(target)) is not None and theirs not in ALLOWED[mine]
    ]
    assert not wrong, f"{mine} may import only {sorted(ALLOWED[mine])}: {wrong}"


def test_every_module_is_in_a_layer_package():
    """No module sits beside the layers (a flat `ingest/x.py` would belong to none)."""
    loose = [
        str(path.relative_to(ROOT))
        for path in sources()
        if layer(module_name(path)) in (None, "ingest") and module_name(path) != "ingest"
    ]
    assert not loose, f"modules outside every layer package {LAYERS}: {loose}"


def test_no_package_is_imported_by_a_string():
    found = []
    for path in sources():
        text = path.read_text(encoding="utf-8")
        for name in PACKAGES:
            for call in ("import_module(", "importorskip(", "__import__("):
                if f'{call}"{name}' in text or f"{call}'{name}" in text:
                    found.append(f"{path.relative_to(ROOT)}: {call}{name}...")
    assert not found, found


def test_the_check_sees_an_upward_import(tmp_path):
    """The test above can fail: an engine module importing the server is caught."""
    # written under tmp_path, read as the module replays._layer_probe: a killed run leaves
    # nothing in the checkout
    fake = tmp_path / "_layer_probe.py"
    fake.write_text(
        "def f():\n    from ..ingest.server.app import create_app\n    import ingest.cli\n"
    )
    targets = [t for _, t in imported(fake, "replays._layer_probe")]
    assert "ingest.server.app.create_app" in targets and "ingest.cli" in targets
    assert layer("ingest.server.app.create_app") == "ingest.server"
    assert layer("ingest.server.app.create_app") not in ALLOWED["replays"]
    assert layer("ingest.cli.commands") not in ALLOWED["ingest.server"]  # the CLI is on top
    assert layer("ingest.app") is None  # a module beside the layers is in none of them


HEAVY = ("duckdb", "pyarrow", "polars", "numpy", "flask", "altair", "scipy")


@pytest.mark.parametrize(
    ("module", "kept_out"),
    [
        # `balance` parses its command line and the server's supervisor starts (they read the
        # settings and the target through ingest.storage) before any command needs a stack
        ("ingest.cli", HEAVY),
        ("ingest.storage.where", HEAVY),
        # what each server's judge fork server imports before it forks the judges: the engines,
        # the codec and the rows (Arrow), not the database
        ("ingest.server.workers", ("duckdb", "polars", "flask", "altair", "scipy")),
        # the jobs use scipy's special functions; scipy.stats would cost every process that
        # imports them more than the rest of scipy
        ("analysis.jobs", ("scipy.stats",)),
    ],
)
def test_what_a_start_imports(module, kept_out):
    code = (
        f"import sys, {module}; print(' '.join(m for m in {list(kept_out)!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [], f"importing {module} loads {done.stdout.strip()}"


APP_ON_A_FILE = """
import sys
from ingest.server.app import close_app, create_app
from ingest.server.config import load

app = create_app(load())
try:
    print(' '.join(m for m in sys.argv[1:] if m in sys.modules))
    with app.test_client() as client:  # the first page loads what it needs
        assert client.get('/dashboard/').status_code == 200
    assert 'polars' in sys.modules
finally:
    close_app(app)
"""


@pytest.mark.parametrize(
    ("validate", "kept_out"),
    [
        ("0", ("altair", "polars", "psycopg", "ingest.storage.lake", "analysis.jobs")),
        ("1", ("polars", "psycopg", "ingest.storage.lake")),  # charts checked: Altair at start
    ],
)
def test_a_file_servers_app_starts_without_the_dashboards_stacks_or_the_lake(
    tmp_path, validate, kept_out
):
    """A server's worker builds its app without Altair and Polars (they load with the first
    dashboard page or chart) and, on a store file, without the lake or PostgreSQL's driver:
    a third of a start's CPU (benchmarks/server_start.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALANCE_")}
    env |= {"BALANCE_DB": str(tmp_path / "store.duckdb"), "BALANCE_WORKERS": "0"}
    env["BALANCE_VALIDATE_CHARTS"] = validate
    done = subprocess.run(
        [sys.executable, "-c", APP_ON_A_FILE, *kept_out],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [], f"the app's start loads {done.stdout.strip()}"


def test_the_storage_packages_lazy_names_are_its_declared_ones():
    """ingest.storage imports its public names at first use (`_HOME`): the names its
    TYPE_CHECKING imports declare (what a type checker and a reader see), `__all__` and
    `_HOME` are one list, each name resolves to the object of the module `_HOME` names."""
    import importlib

    import ingest.storage as storage

    declared: dict[str, str] = {}
    tree = ast.parse((ROOT / "ingest" / "storage" / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.unparse(stmt)
                for alias in stmt.names:
                    declared[alias.name] = stmt.module or alias.name
    assert declared == storage._HOME
    assert sorted(storage.__all__) == sorted(declared)
    for name, home in declared.items():
        module = importlib.import_module(f"ingest.storage.{home}")
        assert getattr(storage, name) is (module if home == name else getattr(module, name))
