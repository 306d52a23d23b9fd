"""Fails when the client's or the Airflow provider's code needs a Python newer than the oldest they
declare (requires-python = ">=3.9"). The suite runs on a newer Python, where such code works, so
nothing else would notice.

    python3 clients/python/check_oldest_python.py     # exit 1 and one line per finding

Checked: the grammar of 3.9 (ast's feature_version: match, parenthesised context managers, ...),
`X | Y` in annotations (evaluated at definition in 3.9 unless `from __future__ import annotations`)
and in isinstance/issubclass, typing names added in 3.10+, dataclass(slots=, kw_only=) and
zip(strict=). Standard library only."""
import ast
import sys
from pathlib import Path

OLDEST = (3, 9)
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [ROOT / "python" / "src", ROOT / "airflow" / "src"]
NEWER_TYPING = {"ParamSpec", "Concatenate", "TypeAlias", "TypeGuard", "Self", "Never", "LiteralString", "NotRequired",
                "Required", "Unpack", "TypeVarTuple", "assert_never", "assert_type", "reveal_type", "dataclass_transform",
                "override", "get_overloads", "clear_overloads", "is_typeddict", "ReadOnly", "TypeIs"}


def has_union_operator(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) for n in ast.walk(node))


def annotations_of(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def findings(path: Path):
    text = path.read_text()
    try:
        tree = ast.parse(text, filename=str(path), feature_version=OLDEST)
    except SyntaxError as error:
        yield "%s:%s: not Python %d.%d grammar: %s" % (path, error.lineno, OLDEST[0], OLDEST[1], error.msg)
        return
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
                    for n in tree.body)
    if not postponed:
        for annotation in annotations_of(tree):
            if has_union_operator(annotation):
                yield "%s:%d: `X | Y` in an annotation needs Python 3.10" % (path, annotation.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("typing", "dataclasses"):
            for alias in node.names:
                if node.module == "typing" and alias.name in NEWER_TYPING:
                    yield "%s:%d: typing.%s needs Python 3.10+" % (path, node.lineno, alias.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing" and node.attr in NEWER_TYPING:
            yield "%s:%d: typing.%s needs Python 3.10+" % (path, node.lineno, node.attr)
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            keywords = {k.arg for k in node.keywords}
            if name in ("isinstance", "issubclass") and len(node.args) == 2 and has_union_operator(node.args[1]):
                yield "%s:%d: %s with `X | Y` needs Python 3.10" % (path, node.lineno, name)
            if name == "dataclass" and keywords & {"slots", "kw_only", "match_args"}:
                yield "%s:%d: dataclass(%s) needs Python 3.10" % (path, node.lineno, ", ".join(sorted(keywords & {"slots", "kw_only", "match_args"})))
            if name == "zip" and "strict" in keywords:
                yield "%s:%d: zip(strict=) needs Python 3.10" % (path, node.lineno)


def main() -> int:
    files = sorted(f for package in PACKAGES for f in package.rglob("*.py"))
    found = [line for f in files for line in findings(f)]
    for line in found:
        print(line)
    if not files:
        print("no files under %s" % ", ".join(map(str, PACKAGES)))
        return 1
    print("%d files checked for Python %d.%d: %d finding(s)" % (len(files), OLDEST[0], OLDEST[1], len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
