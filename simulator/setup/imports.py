"""Which third-party distributions a tree imports: a tree-sitter scan that survives bad files.

pipreqs-style scanners stop at the first file Python's own parser rejects; tree-sitter parses
every file into a tree with ERROR nodes where the syntax is broken, so the imports of the rest
of that file (and of every other file) are still found. The standard library and the
repository's own modules and packages are left out.

Only the project's own code is scanned (`project_code_files`): the packages its metadata
declares, else its top-level package folders and root modules, plus its test modules; never
test data, fixtures, vendored copies, docs or examples (a linter's or formatter's test inputs
import made-up names on purpose). Import names map to distributions only through the maintained
table below or the index's own data (`names.resolve_imports`), never by guessing.

An import is *guarded* when it sits inside try/if/with or a function: such imports are optional
(a fallback, a platform branch, a lazy feature), so the ladder installs only unguarded ones up
front and leaves the others to the repair loop, which installs what a real run proves missing.
"""

from __future__ import annotations

import configparser
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from simulator.analysis.languages import parser
from simulator.analysis.model import Lang
from simulator.workspace import local_files

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
    "pandas": "pandas",
    "matplotlib": "matplotlib",
    "torch": "torch",
    "torchvision": "torchvision",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "jax": "jax",
    "numba": "numba",
    "sympy": "sympy",
    "networkx": "networkx",
    "statsmodels": "statsmodels",
    "seaborn": "seaborn",
    "xarray": "xarray",
    "h5py": "h5py",
    "tables": "tables",
    "requests": "requests",
    "six": "six",
    "click": "click",
    "tqdm": "tqdm",
    "pytest": "pytest",
    "tabulate": "tabulate",
    "packaging": "packaging",
    "docutils": "docutils",
    "sphinx": "sphinx",
    "nltk": "nltk",
    "railroad": "railroad-diagrams",
    "pyparsing": "pyparsing",
    "past": "future",
    "future": "future",
    "builtins": "future",
    "google.cloud": "google-cloud-core",
    "Cryptodome": "pycryptodomex",
    "skbuild": "scikit-build",
    "pkg_resources": "setuptools<82",  # 82.0.0 removed pkg_resources (checked on the index)
    "ruamel.yaml": "ruamel.yaml",
    "sentencepiece": "sentencepiece",
    "lz4": "lz4",
    "zstd": "zstd",
    "snappy": "python-snappy",
    "tornado": "tornado",
    "twisted": "Twisted",
    "gevent": "gevent",
    "cython": "Cython",
    "pyximport": "Cython",
    "colorama": "colorama",
    "termcolor": "termcolor",
    "chardet": "chardet",
    "certifi": "certifi",
    "urllib3": "urllib3",
    "nose2": "nose2",
    "parameterized": "parameterized",
    "nose_parameterized": "nose-parameterized",
    "testfixtures": "testfixtures",
    "responses": "responses",
    "httpretty": "httpretty",
    "pyfakefs": "pyfakefs",
    "hamcrest": "PyHamcrest",
    "sure": "sure",
    "ddt": "ddt",
    "xmlrunner": "unittest-xml-reporting",
    "pkgconfig": "pkgconfig",
    "cffi": "cffi",
    "psutil": "psutil",
    "scikits": "scikits.bootstrap",
    "jsonschema": "jsonschema",
    "attrs": "attrs",
    "pyrsistent": "pyrsistent",
    "wrapt": "wrapt",
    "decorator": "decorator",
    "ujson": "ujson",
    "orjson": "orjson",
    "regex": "regex",
    "lxml.etree": "lxml",
    "html5lib": "html5lib",
    "sgmllib": "sgmllib3k",
    "editdistance": "editdistance",
    "unidecode": "Unidecode",
    "text_unidecode": "text-unidecode",
    "xlrd": "xlrd",
    "openpyxl": "openpyxl",
    "emcee": "emcee",
    "lmfit": "lmfit",
    "uncertainties": "uncertainties",
    "asteval": "asteval",
    "patsy": "patsy",
    "pint": "Pint",
    "sklearn_pandas": "sklearn-pandas",
    "autograd": "autograd",
    "opt_einsum": "opt-einsum",
    "numdifftools": "numdifftools",
    "filterpy": "filterpy",
    "hmmlearn": "hmmlearn",
    "deap": "deap",
    "simpy": "simpy",
    "ecdsa": "ecdsa",
    "rsa": "rsa",
    "pyasn1": "pyasn1",
    "gmpy2": "gmpy2",
    "gmpy": "gmpy2",
    "feedparser": "feedparser",
    "parsimonious": "parsimonious",
    "webencodings": "webencodings",
    "genshi": "Genshi",
    "bitarray": "bitarray",
    "kiwisolver": "kiwisolver",
    "cppy": "cppy",
    "msgpack_numpy": "msgpack-numpy",
    "setproctitle": "setproctitle",
    "pybind11": "pybind11",
    "joblib": "joblib",
    "threadpoolctl": "threadpoolctl",
    "pyflakes": "pyflakes",
    "flake8": "flake8",
    "pycodestyle": "pycodestyle",
    "coverage": "coverage",
    "tox": "tox",
    "virtualenv": "virtualenv",
    "wheel": "wheel",
    "pip": "pip",
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
    test_modules: list[str] = field(default_factory=list)  # test_*.py / *_test(s).py files
    test_functions: int = 0  # `def test...` in them: what a runner should at least collect

    def distributions(self, *, optional: bool = False) -> dict[str, str]:
        """Distribution -> the import name that needs it, for names the table knows (the
        others go through `names.resolve_imports`, which asks the index)."""
        names = dict(self.required)
        if optional:
            names.update({k: v for k, v in self.optional.items() if k not in names})
        out: dict[str, str] = {}
        for name in sorted(names):
            dist = distribution_for(name)
            if dist is not None:
                out[dist] = name
        return out


def distribution_for(module: str) -> str | None:
    """The distribution (a requirement) that provides import name `module` by the maintained
    table, or None: a name the table does not know is resolved through the index
    (`names.resolve_imports`), never guessed."""
    if module in DISTRIBUTIONS:
        return DISTRIBUTIONS[module]
    return DISTRIBUTIONS.get(module.split(".")[0])


# Folders that hold no code the project runs: test inputs, fixtures, vendored copies, docs,
# examples, build output. A file under one of them is never scanned for installs.
NOT_CODE_DIRS = re.compile(
    r"^(fixtures?|test_?data|test-data|data|datasets?|inputs?|functional|regrtest_data|"
    r"samples?|cases|resources|assets|snapshots?|expected|golden|"
    r"_?vendor(ed)?|third_?party|thirdparty|externals?|extern|contrib_vendor|"
    r"docs?|doc_?src|examples?|demos?|tutorials?|notebooks?|benchmarks?|bench|"
    r"site-packages|node_modules|build|dist|\.tox|\.nox|\.eggs)$",
    re.I,
)
TEST_DIRS = re.compile(r"^(tests?|testing|unittests?|test_suite)$", re.I)
# Root modules that are tooling, not the project: setup.py imports setuptools (installed anyway).
ROOT_TOOLING = frozenset(
    {"setup", "conftest", "noxfile", "fabfile", "tasks", "dodo", "pavement", "ez_setup", "docs"}
)


def declared_packages(root: Path) -> list[str]:
    """Top-level packages and modules the project's metadata names, where it lists them
    literally (`[tool.setuptools] packages`, Poetry `packages`, Hatch wheel `packages`,
    setup.cfg `packages`/`py_modules`, setup.py `packages=[...]`/`py_modules=[...]`, Flit's
    module); empty when it leaves them to discovery (`find:`, `find_packages()`)."""
    names: list[str] = []
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    tool = data.get("tool") or {}
    setuptools = tool.get("setuptools") or {}
    if isinstance(setuptools.get("packages"), list):
        names += [str(p) for p in setuptools["packages"]]
    if isinstance(setuptools.get("py-modules"), list):
        names += [str(p) for p in setuptools["py-modules"]]
    for item in (tool.get("poetry") or {}).get("packages") or []:
        if isinstance(item, dict) and item.get("include"):
            names.append(str(item["include"]))
    wheel = (((tool.get("hatch") or {}).get("build") or {}).get("targets") or {}).get("wheel")
    if isinstance(wheel, dict) and isinstance(wheel.get("packages"), list):
        names += [str(p).rstrip("/").split("/")[-1] for p in wheel["packages"]]
    flit = ((tool.get("flit") or {}).get("module") or {}).get("name")
    if flit:
        names.append(str(flit))
    cfg = root / "setup.cfg"
    if cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(cfg.read_text(errors="replace"))
            for key in ("packages", "py_modules"):
                if parser.has_option("options", key):
                    value = parser.get("options", key)
                    if "find" not in value:
                        names += re.split(r"[\s,]+", value.strip())
        except configparser.Error:
            pass
    setup_py = root / "setup.py"
    if setup_py.is_file():
        text = setup_py.read_text(errors="replace")
        for key in ("packages", "py_modules"):
            match = re.search(rf"\b{key}\s*=\s*\[([^\]]*)\]", text)
            if match:
                names += re.findall(r"['\"]([\w.]+)['\"]", match.group(1))
    tops = []
    for name in names:
        top = name.replace("/", ".").split(".")[0].strip()
        if top and re.match(r"^[A-Za-z_]\w*$", top) and top not in tops:
            tops.append(top)
    return tops


def project_code_files(root: Path) -> list[Path]:
    """The project's own code: the declared packages, else the top-level package folders (in
    src/ or the root) and root modules, else every Python file; plus the test folders' modules.
    Files under test data, fixtures, vendored code, docs or examples are never included."""
    every = python_files(root)

    def parts(path: Path) -> tuple[str, ...]:
        return path.relative_to(root).parts

    def is_code(path: Path) -> bool:
        return not any(NOT_CODE_DIRS.match(part) for part in parts(path)[:-1])

    def in_tests(path: Path) -> bool:
        return any(TEST_DIRS.match(part) for part in parts(path)[:-1])

    def is_test_module(path: Path) -> bool:
        stem = path.stem
        return in_tests(path) or bool(re.match(r"^(test_\w+|\w+_tests?|tests?|conftest)$", stem))

    code = [p for p in every if is_code(p)]
    declared = declared_packages(root)
    roots: set[str] = set()
    for base in ("src", "lib", "."):
        for name in declared:
            if (root / base / name).is_dir() or (root / base / f"{name}.py").is_file():
                roots.add(str(Path(base) / name) if base != "." else name)
    if not roots:
        for base in ("src", "."):
            folder = root / base
            if not folder.is_dir():
                continue
            for entry in sorted(folder.iterdir()):
                if entry.name.startswith(".") or NOT_CODE_DIRS.match(entry.name):
                    continue
                if TEST_DIRS.match(entry.name):
                    continue
                if (entry.is_dir() and (entry / "__init__.py").is_file()) or (
                    entry.suffix == ".py" and entry.stem not in ROOT_TOOLING
                ):
                    roots.add(str(entry.relative_to(root)))
            if roots:
                break
    if not roots:  # no package anywhere: scripts in folders (research code)
        return code

    def under_roots(path: Path) -> bool:
        rel = str(path.relative_to(root))
        return any(
            rel == r or rel.startswith(r.rstrip("/") + "/") or rel == f"{r}.py" for r in roots
        )

    return [p for p in code if under_roots(p) or is_test_module(p)]


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in local_files(root) if p.suffix in (".py", ".pyi", ".pyx"))


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
    """The imports of the project's own code (`project_code_files`); every file of the tree
    still counts for the local names, so a test's `import helpers` is never installed."""
    everything = python_files(root)
    files = project_code_files(root)
    result = ImportScan(files=len(files), local=local_names(root, everything))
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
        if re.match(r"^(test_?\w*|\w+_tests?)\.py$", path.name) and path.name != "test.py":
            result.test_modules.append(rel)
            result.test_functions += len(re.findall(rb"^\s*(?:async\s+)?def test\w*\(", data, re.M))
        if tree.root_node.has_error:
            result.files_with_errors.append(rel)
        # `pytest.importorskip("dask")` makes the module's later `import dask...` optional:
        # the tests skip without it, as the project's own CI without the extra does.
        skippable = {m.decode().split(".")[0] for m in _IMPORTORSKIP.findall(data)}
        for name, guarded in _imports(tree.root_node):
            top = name.split(".")[0]
            guarded = guarded or top in skippable
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


_IMPORTORSKIP = re.compile(rb"importorskip\(\s*[\"']([A-Za-z_][\w.]*)[\"']")


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
