"""Maple's changes to poke-engine's source: a seed for its MCTS, and panics without stderr.

poke-engine 0.0.48 draws the MCTS's random numbers (which child of a chance node to follow)
from the OS, so an iteration budget fixes the work but not the answer. The edits below give
``monte_carlo_tree_search`` (and the bindings' ``mcts``) an optional ``seed``: with one
thread and an iteration budget, the same state and seed give the same visits. Without a seed
the engine behaves as released. And a panic on a state the engine does not expect reaches
Python as a ``PanicException`` carrying its message (Maple's search falls back to the policy
with one warning), so the module's panic hook prints nothing (Rust's default hook wrote two
lines, or with ``RUST_BACKTRACE`` set a whole backtrace, to stderr on every such decision);
``MAPLE_ENGINE_TRACE`` set (to anything) at import keeps Rust's default hook.
Both build paths (the crate registry and Debian's crates) apply them; a build that has the
seed answers :func:`has_seed`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType

# run_mcts_loop's parameters as released
_LOOP_PARAMS = (
    "    root_node: &mut Node,\n"
    "    state: &mut State,\n"
    "    root_eval: &f32,\n"
    "    children: &mut HashMap<(usize, usize, usize), Box<[Node]>>,\n"
    "    limit: SearchLimit,\n"
)
_LOOP_ARGS = "root_node, state, root_eval, children, limit"

# (file, the text as released, what replaces it): each must occur exactly once
EDITS = (
    (
        "src/mcts.rs",
        f"fn run_mcts_loop(\n{_LOOP_PARAMS}) {{\n    let mut rng = rng();\n",
        f"fn run_mcts_loop(\n{_LOOP_PARAMS}    seed: Option<u64>,\n) {{\n"
        "    match seed {\n"
        f"        Some(s) => run_mcts_loop_with({_LOOP_ARGS},\n"
        "            &mut rand::rngs::StdRng::seed_from_u64(s)),\n"
        f"        None => run_mcts_loop_with({_LOOP_ARGS}, &mut rng()),\n"
        "    }\n"
        "}\n\n"
        f"fn run_mcts_loop_with(\n{_LOOP_PARAMS}    rng: &mut impl Rng,\n) {{\n",
    ),
    (
        "src/mcts.rs",
        "mcts_iteration(root_node, state, root_eval, children, &mut rng);",
        "mcts_iteration(root_node, state, root_eval, children, rng);",
    ),
    (
        "src/mcts.rs",
        "    max_time: Duration,\n"
        "    max_iterations: u32,\n"
        ") -> MctsResult {\n"
        "    let mut root_node = Node::new();\n",
        "    max_time: Duration,\n"
        "    max_iterations: u32,\n"
        ") -> MctsResult {\n"
        "    perform_mcts_seeded(state, side_one_options, side_two_options, max_time,\n"
        "                        max_iterations, None)\n"
        "}\n"
        "\n"
        "pub fn perform_mcts_seeded(\n"
        "    state: &mut State,\n"
        "    side_one_options: Vec<MoveChoice>,\n"
        "    side_two_options: Vec<MoveChoice>,\n"
        "    max_time: Duration,\n"
        "    max_iterations: u32,\n"
        "    seed: Option<u64>,\n"
        ") -> MctsResult {\n"
        "    let mut root_node = Node::new();\n",
    ),
    (
        "src/mcts.rs",
        "        &mut children,\n        search_limit,\n    );\n",
        "        &mut children,\n        search_limit,\n        seed,\n    );\n",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "use poke_engine::mcts::{perform_mcts, MctsResult, MctsSideResult};",
        "use poke_engine::mcts::{perform_mcts_seeded, MctsResult, MctsSideResult};",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "#[pyfunction]\nfn mcts(\n",
        "#[pyfunction]\n"
        "#[pyo3(signature = (py_state, duration_ms, iterations, threads, seed=None))]\n"
        "fn mcts(\n",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "    threads: usize,\n) -> PyResult<PyMctsResult> {",
        "    threads: usize,\n    seed: Option<u64>,\n) -> PyResult<PyMctsResult> {",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "perform_mcts(&mut state, s1_options, s2_options, duration, iterations)",
        "perform_mcts_seeded(&mut state, s1_options, s2_options, duration, iterations, seed)",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "fn py_poke_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {\n",
        "fn py_poke_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {\n"
        '    if std::env::var_os("MAPLE_ENGINE_TRACE").is_none() {\n'
        "        std::panic::set_hook(Box::new(|_| {}));  // Maple: the PanicException says it\n"
        "    }\n",
    ),
    (
        "python/poke_engine/__init__.py",
        "    state: State, duration_ms: int = 1000, iterations: int = 0, threads: int = 1\n"
        ") -> MctsResult:",
        "    state: State,\n"
        "    duration_ms: int = 1000,\n"
        "    iterations: int = 0,\n"
        "    threads: int = 1,\n"
        "    seed: int | None = None,\n"
        ") -> MctsResult:",
    ),
    (
        "python/poke_engine/__init__.py",
        "mcts(state, duration_ms, iterations, threads))",
        "mcts(state, duration_ms, iterations, threads, seed))",
    ),
    (
        "python/poke_engine/poke_engine.pyi",
        "    py_state: State, duration_ms: int, iterations: int, threads: int\n) -> MctsResult:",
        "    py_state: State,\n"
        "    duration_ms: int,\n"
        "    iterations: int,\n"
        "    threads: int,\n"
        "    seed: int | None = None,\n"
        ") -> MctsResult:",
    ),
)


class PatchError(RuntimeError):
    """The source is not the release the edits were written for: one line."""


def apply(src: Path) -> None:
    """Applies :data:`EDITS` to the unpacked sdist at ``src`` (PatchError naming the file and
    the first line of an edit that does not match exactly once)."""
    for name, old, new in EDITS:
        path = src / name
        text = path.read_text()
        if text.count(old) != 1:
            first = old.strip().splitlines()[0]
            raise PatchError(f"{name}: {first!r} is not in it once (another poke-engine?)")
        path.write_text(text.replace(old, new))


@cache
def has_seed(module: ModuleType) -> bool:
    """Whether this build takes a seed: two seeded one-chunk searches of a state whose turn
    has a chance node (a 70%-accurate move) agree, and the call with a seed is accepted."""
    try:
        mon = module.Pokemon(moves=[module.Move(id="tackle"), module.Move(id="hypnosis")])
        foe = module.Pokemon(moves=[module.Move(id="tackle"), module.Move(id="hypnosis")])
        state = module.State(
            side_one=module.Side(pokemon=[mon]), side_two=module.Side(pokemon=[foe])
        )
        runs = [module.mcts(state, 0, 1000, 1, 7) for _ in range(2)]
    except TypeError:  # the released signature: four arguments
        return False
    visits = [[r.visits for r in run.s1] for run in runs]
    return visits[0] == visits[1]
