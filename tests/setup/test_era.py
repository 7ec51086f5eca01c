"""Which failed builds are old-era causes (the build tool removed what the build uses): on the
messages the hard corpus's builds printed."""

from __future__ import annotations

from simulator.setup.era import era_causes

# The closing lines of three failed installs of the hard corpus (uv and pip said the same).
DEAP = (
    "  cause: ...get_requires_for_build_editable` failed\n"
    "  error in deap setup command: use_2to3 is invalid.\n"
)
HTML5LIB = (
    '           File "<string>", line 9, in <module>\n'
    "         ModuleNotFoundError: No module named 'pkg_resources'\n"
)
PYYAML = (
    '           File "<string>", line 201, in get_source_files\n'
    "         AttributeError: 'build_ext' object has no attribute 'cython_sources'\n"
)


# hmmlearn 0.2.7's C++ against today's pybind11 (gcc's quotes are typographic)
HMMLEARN = (
    "         src/_hmmc.cpp:265:39: error: use of deleted function \u2018pybind11::gil_scoped_"
    "release::gil_scoped_release(const pybind11::gil_scoped_release&)\u2019\n"
)

# editdistance 0.6.0's C++ extension on pypy3 (stop 40), uv's indentation kept
EDITDISTANCE_PYPY = (
    '           File "/home/reposim/.cache/uv/builds-v0/.tmp1s7W5p/lib/pypy3.9/site-packages/'
    'setuptools/_distutils/compilers/C/unix.py", line 290, in link\n'
    "             linker = (\n"
    "         TypeError: 'NoneType' object is not subscriptable (key slice(None, None, None))\n"
)


def test_each_old_era_build_failure_names_its_tool_and_the_release_that_removed_it() -> None:
    assert [r.bound for r in era_causes(HMMLEARN)] == ["pybind11<2.10.4"]
    assert [r.bound for r in era_causes(DEAP)] == ["setuptools<58"]
    assert [r.bound for r in era_causes(HTML5LIB)] == ["setuptools<82"]
    assert [r.bound for r in era_causes(PYYAML)] == ["Cython<3"]
    assert [r.bound for r in era_causes(EDITDISTANCE_PYPY)] == ["setuptools<72.2"]
    # Two setuptools causes in one output: the older bound serves both.
    assert [r.bound for r in era_causes(DEAP + HTML5LIB)] == ["setuptools<58"]
    assert era_causes("error: command 'gcc' failed with exit code 1") == []
    # The same TypeError elsewhere is not this cause.
    assert era_causes("TypeError: 'NoneType' object is not subscriptable\n") == []
