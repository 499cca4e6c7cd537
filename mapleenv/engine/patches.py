"""Maple's changes to poke-engine's source: a seed and a root prior for its MCTS, and panics
without stderr.

poke-engine 0.0.48 draws the MCTS's random numbers (which child of a chance node to follow)
from the OS, so an iteration budget fixes the work but not the answer. The edits below give
``monte_carlo_tree_search`` (and the bindings' ``mcts``) an optional ``seed``: with one
thread and an iteration budget, the same state and seed give the same visits. Without a seed
the engine behaves as released. They also give it an optional ``prior``: a weight per own
root choice (by the choice's name, as the result names it; 0 for one not named) that adds a
PUCT term ``weight * sqrt(N) / (1 + n)`` to that choice's UCB1 score at the root only, so
the policy steers which own moves the tree spends its iterations on (no prior, or all
weights 0: the released search). And a panic on a state the engine does not expect reaches
Python as a ``PanicException`` carrying its message (Maple's search falls back to the policy
with one warning), so the module's panic hook prints nothing (Rust's default hook wrote two
lines, or with ``RUST_BACKTRACE`` set a whole backtrace, to stderr on every such decision);
``MAPLE_ENGINE_TRACE`` set (to anything) at import keeps Rust's default hook.
Both build paths (the crate registry and Debian's crates) apply them; a build that has them
answers :func:`has_edits`.
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
# one side's MoveNodes as populate builds them (no visits yet)
_NO_VISITS = "                visits: 0,\n"
_POPULATE_MAP = (
    "        let {side}_options_vec: Vec<MoveNode> = {side}_options\n"
    "            .iter()\n"
    "            .map(|x| MoveNode {{\n"
    "                move_choice: x.clone(),\n"
    "                total_score: 0.0,\n" + _NO_VISITS + "            }})\n"
)
_NO_PRIOR = _NO_VISITS + "                prior: 0.0,\n"

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
        "                        max_iterations, None, &[])\n"
        "}\n"
        "\n"
        "pub fn perform_mcts_seeded(\n"
        "    state: &mut State,\n"
        "    side_one_options: Vec<MoveChoice>,\n"
        "    side_two_options: Vec<MoveChoice>,\n"
        "    max_time: Duration,\n"
        "    max_iterations: u32,\n"
        "    seed: Option<u64>,\n"
        "    s1_prior: &[f32],\n"
        ") -> MctsResult {\n"
        "    let mut root_node = Node::new();\n",
    ),
    (
        "src/mcts.rs",
        "        root_node.populate(side_one_options, side_two_options);\n    }\n",
        "        root_node.populate(side_one_options, side_two_options);\n    }\n"
        "    let root_s1 = root_node.s1_options.as_mut().unwrap();\n"
        "    for (node, weight) in root_s1.iter_mut().zip(s1_prior) {\n"
        "        node.prior = *weight;\n"
        "    }\n",
    ),
    (
        "src/mcts.rs",
        "pub struct MoveNode {\n"
        "    pub move_choice: MoveChoice,\n"
        "    pub total_score: f32,\n"
        "    pub visits: u32,\n"
        "}\n",
        "pub struct MoveNode {\n"
        "    pub move_choice: MoveChoice,\n"
        "    pub total_score: f32,\n"
        "    pub visits: u32,\n"
        "    pub prior: f32,\n"
        "}\n",
    ),
    (
        "src/mcts.rs",
        _POPULATE_MAP.format(side="s1"),
        _POPULATE_MAP.format(side="s1").replace(_NO_VISITS, _NO_PRIOR),
    ),
    (
        "src/mcts.rs",
        _POPULATE_MAP.format(side="s2"),
        _POPULATE_MAP.format(side="s2").replace(_NO_VISITS, _NO_PRIOR),
    ),
    (
        "src/mcts.rs",
        "            + (2.0 * (parent_visits as f32).ln() / self.visits as f32).sqrt();\n",
        "            + (2.0 * (parent_visits as f32).ln() / self.visits as f32).sqrt()\n"
        "            + self.prior * (parent_visits as f32).sqrt() / (1.0 + self.visits as f32);\n",
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
        "#[pyo3(signature = (py_state, duration_ms, iterations, threads, seed=None, prior=None))]\n"
        "fn mcts(\n",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "    threads: usize,\n) -> PyResult<PyMctsResult> {",
        "    threads: usize,\n"
        "    seed: Option<u64>,\n"
        "    prior: Option<std::collections::HashMap<String, f32>>,\n"
        ") -> PyResult<PyMctsResult> {",
    ),
    (
        "poke-engine-py/src/lib.rs",
        "perform_mcts(&mut state, s1_options, s2_options, duration, iterations)",
        "{\n"
        "        let s1_prior: Vec<f32> = match &prior {\n"
        "            Some(weights) => s1_options\n"
        "                .iter()\n"
        "                .map(|m| movechoice_to_string(&state.side_one, m))\n"
        "                .map(|name| *weights.get(&name).unwrap_or(&0.0))\n"
        "                .collect(),\n"
        "            None => Vec::new(),\n"
        "        };\n"
        "        perform_mcts_seeded(\n"
        "            &mut state, s1_options, s2_options, duration, iterations, seed, &s1_prior,\n"
        "        )\n"
        "    }",
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
        "    prior: dict[str, float] | None = None,\n"
        ") -> MctsResult:",
    ),
    (
        "python/poke_engine/__init__.py",
        "mcts(state, duration_ms, iterations, threads))",
        "mcts(state, duration_ms, iterations, threads, seed, prior))",
    ),
    (
        "python/poke_engine/poke_engine.pyi",
        "    py_state: State, duration_ms: int, iterations: int, threads: int\n) -> MctsResult:",
        "    py_state: State,\n"
        "    duration_ms: int,\n"
        "    iterations: int,\n"
        "    threads: int,\n"
        "    seed: int | None = None,\n"
        "    prior: dict[str, float] | None = None,\n"
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
def has_edits(module: ModuleType) -> bool:
    """Whether this build has Maple's edits: two seeded one-chunk searches of a state whose
    turn has a chance node (a 70%-accurate move) agree, and a prior on that move draws more of
    the root's visits to it."""
    try:
        mon = module.Pokemon(moves=[module.Move(id="tackle"), module.Move(id="hypnosis")])
        foe = module.Pokemon(moves=[module.Move(id="tackle"), module.Move(id="hypnosis")])
        state = module.State(
            side_one=module.Side(pokemon=[mon]), side_two=module.Side(pokemon=[foe])
        )
        runs = [module.mcts(state, 0, 1000, 1, 7) for _ in range(2)]
        steered = module.mcts(state, 0, 1000, 1, 7, {"hypnosis": 50.0})
    except TypeError:  # the released signature (four arguments) or one without the prior
        return False
    visits = [{r.move_choice: r.visits for r in run.s1} for run in (*runs, steered)]
    return visits[0] == visits[1] and visits[2]["hypnosis"] > visits[0]["hypnosis"]
