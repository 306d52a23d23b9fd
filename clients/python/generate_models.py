"""Generates src/submission_service/models.py (TypedDicts) from the service's schemas/*.json.

    python3 clients/python/generate_models.py           # rewrite models.py
    python3 clients/python/generate_models.py --check   # exit 1 when models.py is stale

Standard library only, so that the check runs without the client's dependencies.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMAS = HERE.parent.parent / "schemas"
TARGET = HERE / "src" / "submission_service" / "models.py"

SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class Generator:
    def __init__(self, schemas):
        self.titles = {s["$id"]: s["title"] for s in schemas}
        self.blocks = []

    def type_of(self, node, owner, prop):
        if "$ref" in node:
            return '"%s"' % self.titles[node["$ref"].rstrip("#")]
        if "enum" in node:
            return "Literal[%s]" % ", ".join(json.dumps(v) for v in node["enum"])
        kinds = node.get("type")
        if isinstance(kinds, list):
            inner = [self.type_of(dict(node, type=k), owner, prop) for k in kinds if k != "null"]
            joined = inner[0] if len(inner) == 1 else "Union[%s]" % ", ".join(inner)
            return "Optional[%s]" % joined if "null" in kinds else joined
        if kinds == "array":
            return "List[%s]" % self.type_of(node.get("items", {}), owner, prop)
        if kinds == "object":
            if "properties" in node:
                name = owner + "".join(p[:1].upper() + p[1:] for p in prop.split("_"))
                self.typed_dict(name, node)
                return '"%s"' % name
            extra = node.get("additionalProperties")
            return "Dict[str, %s]" % (self.type_of(extra, owner, prop) if isinstance(extra, dict) else "Any")
        return SCALARS.get(kinds, "Any")

    def typed_dict(self, name, node):
        required = set(node.get("required", []))
        lines = ["class %s(TypedDict, total=False):" % name]
        doc = node.get("description")
        if doc:
            lines.append('    """%s"""' % doc.replace("\\", "\\\\").replace('"""', "'''"))
        for prop, sub in node.get("properties", {}).items():
            hint = self.type_of(sub, name, prop)
            note = "  # required" if prop in required else ""
            lines.append("    %s: %s%s" % (prop, hint, note) if prop.isidentifier() else "    # %s: %s (not an identifier)" % (prop, hint))
        if len(lines) == 1:
            lines.append("    pass")
        self.blocks.append("\n".join(lines))

    def top(self, schema):
        title = schema["title"]
        if schema.get("type") == "object" and "properties" in schema:
            self.typed_dict(title, schema)
        else:
            self.blocks.append("%s = %s" % (title, self.type_of(schema, title, "").strip('"')))


def generate():
    schemas = [json.loads(p.read_text()) for p in sorted(SCHEMAS.glob("*.json"))]
    gen = Generator(schemas)
    for schema in schemas:
        gen.top(schema)
    head = [
        '"""The service\'s JSON shapes as TypedDicts. Generated from schemas/*.json by',
        "clients/python/generate_models.py: do not edit. total=False: the comments mark required keys.\"\"\"",
        "",
        "from typing import Any, Dict, List, Literal, Optional, TypedDict, Union  # noqa: F401",
        "",
        '__all__ = [%s]' % ", ".join('"%s"' % s["title"] for s in schemas),
    ]
    return "\n".join(head) + "\n\n\n" + "\n\n\n".join(gen.blocks) + "\n"


def main(argv):
    fresh = generate()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != fresh:
            print("%s is stale: run python3 clients/python/generate_models.py" % TARGET, file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(fresh)
    print("wrote %s" % TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
