"""Which third-party distributions a tree imports: a tree-sitter scan that survives bad files.

pipreqs-style scanners stop at the first file Python's own parser rejects; tree-sitter parses
every file into a tree with ERROR nodes where the syntax is broken, so the imports of the rest
of that file (and of every other file) are still found. Names are mapped to distributions with a
maintained table (`yaml` is PyYAML, `cv2` is opencv-python...), falling back to the import name;
the standard library and the repository's own modules and packages are left out.

An import is *guarded* when it sits inside try/if/with or a function: such imports are optional
(a fallback, a platform branch, a lazy feature), so the ladder installs only unguarded ones up
front and leaves the others to the repair loop, which installs what a real run proves missing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from simulator.analysis.languages import parser
from simulator.analysis.model import Lang
from simulator.workspace import skipped_dir

# Import name -> distribution on the package index, where they differ.
DISTRIBUTIONS: dict[str, str] = {
    "yaml": "PyYAML",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "jwt": "PyJWT",
    "git": "GitPython",
    "dotenv": "python-dotenv",
    "magic": "python-magic",
    "serial": "pyserial",
    "usb": "pyusb",
    "zmq": "pyzmq",
    "google.protobuf": "protobuf",
    "grpc": "grpcio",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
    "pkg_resources": "setuptools",
    "setuptools": "setuptools",
    "_pytest": "pytest",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "Levenshtein": "python-Levenshtein",
    "slugify": "python-slugify",
    "multipart": "python-multipart",
    "jose": "python-jose",
    "ldap": "python-ldap",
    "lxml": "lxml",
    "markdown": "Markdown",
    "mpl_toolkits": "matplotlib",
    "OpenGL": "PyOpenGL",
    "wx": "wxPython",
    "win32api": "pywin32",
    "Image": "Pillow",
    "nacl": "PyNaCl",
    "kafka": "kafka-python",
    "memcache": "python-memcached",
    "socks": "PySocks",
    "sqlalchemy": "SQLAlchemy",
    "flask": "Flask",
    "jinja2": "Jinja2",
    "markupsafe": "MarkupSafe",
    "werkzeug": "Werkzeug",
    "pygments": "Pygments",
    "hypothesis": "hypothesis",
    "typing_extensions": "typing-extensions",
    "importlib_metadata": "importlib-metadata",
    "importlib_resources": "importlib-resources",
    "ruamel": "ruamel.yaml",
    "toml": "toml",
    "tomli": "tomli",
    "zope": "zope.interface",
    "backports": "backports.zoneinfo",
    "pytest_mock": "pytest-mock",
    "pytest_asyncio": "pytest-asyncio",
    "freezegun": "freezegun",
    "simplejson": "simplejson",
    "u_msgpack": "u-msgpack-python",
    "msgpack": "msgpack",
    "Bio": "biopython",
    "igraph": "python-igraph",
    "websocket": "websocket-client",
    "xdist": "pytest-xdist",
    "mock": "mock",
    "nose": "nose",
    "faker": "Faker",
    "tz": "pytz",
    "pytz": "pytz",
    "gi": "PyGObject",
    "cairo": "pycairo",
    "dns": "dnspython",
    "Cython": "Cython",
    "numpy": "numpy",
    "scipy": "scipy",
    "IPython": "ipython",
}
# Modules that exist only on another platform or only inside another program: never installable.
NOT_INSTALLABLE = frozenset(
    {
        "_winapi",
        "msvcrt",
        "winreg",
        "_winreg",
        "win32con",
        "win32file",
        "pythoncom",
        "winsound",
        "java",
        "js",
        "pyodide",
        "__pypy__",
        # Python 2's standard library: code that imports these needs Python 2, not a download.
        "UserDict",
        "urllib2",
        "urlparse",
        "StringIO",
        "cStringIO",
        "cPickle",
        "ConfigParser",
        "Queue",
        "__builtin__",
        "httplib",
        "HTMLParser",
        "Tkinter",
        "commands",
        "exceptions",
        "sets",
        "md5",
        "org",
        "System",
        "clr",
    }
)
_GUARDS = {
    "try_statement",
    "if_statement",
    "with_statement",
    "function_definition",
    "conditional_expression",
}


@dataclass
class ImportScan:
    files: int = 0
    files_with_errors: list[str] = field(default_factory=list)
    local: set[str] = field(default_factory=set)
    required: dict[str, str] = field(default_factory=dict)  # import name -> first file, unguarded
    optional: dict[str, str] = field(default_factory=dict)  # import name -> first file, guarded

    def distributions(self, *, optional: bool = False) -> dict[str, str]:
        """Distribution -> the import name that needs it."""
        names = dict(self.required)
        if optional:
            names.update({k: v for k, v in self.optional.items() if k not in names})
        return {distribution_for(name): name for name in sorted(names)}


def distribution_for(module: str) -> str:
    """The distribution that provides import name `module` (a dotted name or its top level)."""
    if module in DISTRIBUTIONS:
        return DISTRIBUTIONS[module]
    top = module.split(".")[0]
    return DISTRIBUTIONS.get(top, top.replace("_", "-"))


def python_files(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if not (entry.name.startswith(".") or skipped_dir(entry.name, build_output=True)):
                    stack.append(entry)
            elif entry.suffix in (".py", ".pyi", ".pyx"):
                out.append(entry)
    return sorted(out)


def local_names(root: Path, files: list[Path]) -> set[str]:
    """Every module or package name the tree itself provides, wherever it sits.

    A test folder that imports `helpers` from beside it, a src/ layout, a vendored package:
    any directory holding Python files and any module stem counts as local, which errs towards
    installing too little (the repair loop installs what a run proves missing).
    """
    names: set[str] = set()
    for path in files:
        names.add(path.stem)
        for parent in path.relative_to(root).parents:
            if parent.name:
                names.add(parent.name)
    return names


def scan(root: Path, *, max_bytes: int = 2_000_000) -> ImportScan:
    files = python_files(root)
    result = ImportScan(files=len(files), local=local_names(root, files))
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    ts = parser(Lang.PYTHON)
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) > max_bytes or path.suffix == ".pyx":
            continue
        tree = ts.parse(data)
        rel = str(path.relative_to(root))
        if tree.root_node.has_error:
            result.files_with_errors.append(rel)
        for name, guarded in _imports(tree.root_node):
            top = name.split(".")[0]
            if not top or top in stdlib or top in result.local or top in NOT_INSTALLABLE:
                continue
            key = name if name in DISTRIBUTIONS else top
            if top == "google" and key == top:
                continue  # a namespace: only its known members (google.protobuf) map
            if guarded:
                result.optional.setdefault(key, rel)
            else:
                result.required.setdefault(key, rel)
    for name in list(result.optional):
        if name in result.required:
            del result.optional[name]
    return result


def _imports(root: Node) -> list[tuple[str, bool]]:
    """(absolute module name, guarded) for every import statement, ERROR subtrees included."""
    found: list[tuple[str, bool]] = []
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, guarded = stack.pop()
        if node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                target = name.child_by_field_name("name") if name.type == "aliased_import" else name
                if target is not None and target.text:
                    found.append((target.text.decode("utf-8", "replace"), guarded))
            continue
        if node.type == "import_from_statement":
            module = node.child_by_field_name("module_name")
            if module is not None and module.type == "dotted_name" and module.text:
                found.append((module.text.decode("utf-8", "replace"), guarded))
            continue
        inner = guarded or node.type in _GUARDS
        stack.extend((child, inner) for child in node.children)
    return found
