"""The batching policies: each one object whose methods are its rules, in a registry; a name not in it is refused.

The loop (`sched.engine`) asks a policy, at every boundary between passes, what only the policy decides: the waiting
queue's order, whether a batch forms now, whom to preempt when a block runs out, what a request reserves, and whether
a pass holds a token budget. Everything else reads a policy's traits (`traits()`), never its name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from heapq import heappop, heappush

from core.sched import fast_loops
from core.sched.settings import Setting
from core.workload.request import Request

_entry = list.__getitem__  # a keyed queue's own heap entry (its __getitem__ shows requests)


class KeyedQueue(list):
    """A waiting queue ordered by a key per request (smallest first); a preempted request rejoins by its key.

    The same interface as the `deque` a first-come-first-served queue is, so the loop asks both alike. The queue is
    its own heap of (key, request) pairs: `bool` and `len`, asked at every boundary, are the list's own.
    """

    def __init__(self, keys: Sequence):
        super().__init__()
        self.keys = keys  # keys[k] for request k (requests numbered in first-come-first-served order)

    def append(self, k: int) -> None:
        """Add request k (an arrival)."""
        heappush(self, (self.keys[k], k))

    appendleft = append  # a preempted request rejoins by its key, not at the front

    def popleft(self) -> int:
        """Remove and return the head."""
        return heappop(self)[1]

    def __getitem__(self, i: int) -> int:
        if i:
            raise IndexError("a keyed queue shows only its head")
        return _entry(self, 0)[-1]

    def __iter__(self):
        """Yield the waiting requests in the queue's order."""
        return (entry[-1] for entry in sorted(list.__iter__(self)))


# What a run tells the app, the replay and the renderer of its policy (`Policy.traits`), in the order they are sent.
# Its colour and captions are the page's words, kept by the app (app/page/policy_words.py), not here.
TRAITS = ("name", "label", "summary", "forms_batches", "has_timeout", "has_token_budget", "pauses_decoders",
          "has_fast_timed", "ordered", "versus", "engine", "simulator_mode", "order_field", "order_words",
          "orders_by_class")  # fmt: skip


class Policy:
    """Continuous batching, first come first served: the rules every policy starts from.

    Between any two passes finished requests retire and waiting requests are admitted in the queue's order (arrival,
    then trace order) into the lowest free slot while the head fits the KV pool; a head that does not fit blocks the
    queue. A pass holds every running row. When a running request needs a block and none is free, the most recently
    admitted running request is preempted (vLLM's recompute) and returns to the front of the queue. A request holds
    its prompt plus its tokens so far (paged) or reserves prompt plus the cap on output (contiguous).
    """

    name = "continuous"
    label = "continuous"
    summary = "admit and retire between passes"
    forms_batches = False  # a batch forms when every slot is free and runs until its longest member finishes
    has_timeout = False  # a batch also forms when the oldest waiting request has waited `batch_timeout`
    has_token_budget = False  # a pass holds at most `token_budget` tokens: decoding rows first, then prompt chunks
    prefill_chunk_cap = 0  # with a budget: at most this many of one prompt's tokens in a pass (0: the budget's)
    pauses_decoders = False  # a pass that holds a prompt holds no decoding row: the running batch waits (TGI)
    gates_admission = False  # while rows decode, `admits_now` decides whether the waiting join at this boundary
    settings: tuple[Setting, ...] = ()  # the engine settings it takes, each declared once (core/sched/settings.py)
    engine = ""  # the serving engine whose scheduler it follows ("" : the chapter's own policies)
    versus = "static"  # the policy a page shows beside it
    simulator_mode = False  # offered on the simulator's mode choice (the chapter's policies and its two orders)
    queue_words = "in arrival order"  # the waiting order, as the loop's comment says it
    order_field = ""  # the request field its order reads, as the renderer's view names it ("" : arrival)
    order_words = ""  # that field in words
    orders_by_class = False  # its order reads each request's priority class (a page shows each class's latency)
    victim_words = "the last admitted"  # whom a block shortage preempts (at most 24 characters: a loop line)
    # Its rules again as a loop over heaps, for an unlimited pool (3x the engine's speed); None: the engine only.
    fast_steps = fast_timed = None

    def __init__(self, *args, **values):
        """Take each of its engine settings, in order or by name (else its default), checked as it is declared."""
        if len(args) > len(self.settings):
            raise ValueError(f"{self.name} takes {len(self.settings)} settings, got {len(args)}")
        values = {**{setting.name: value for setting, value in zip(self.settings, args)}, **values}
        unknown = [k for k in values if k not in self.knobs]
        if unknown:
            have = ", ".join(self.knobs) or "none"
            raise ValueError(f"{self.name} has no setting {unknown[0]!r} (its settings: {have})")
        for setting in self.settings:
            setattr(self, setting.name, setting.check(values.get(setting.name, setting.default)))

    @property
    def knobs(self) -> tuple[str, ...]:
        """Return its settings' names (the engine's own), in their declared order."""
        return tuple(setting.name for setting in self.settings)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A fast loop hard-codes its own class's rules: a subclass that changes a rule must not run it silently.
        for attr in ("fast_steps", "fast_timed"):
            if attr not in cls.__dict__:
                setattr(cls, attr, None)

    def queue_key(self, request: Request) -> int | None:
        """Return the request's place in the waiting order (smaller first; ties by arrival), or None for arrival."""
        return None

    def new_queue(self, requests: Sequence[Request]):
        """Return an empty waiting queue for `requests` (numbered in first-come-first-served order)."""
        if not self.ordered:
            return deque()  # arrival order; a preempted request goes back to the front (vLLM's FCFS)
        return KeyedQueue([(self.queue_key(r), k) for k, r in enumerate(requests)])

    def victim_rank(self, request: Request) -> int:
        """Return how readily a running request is preempted (larger first; ties: the most recently admitted)."""
        return 0

    allocates_per_chunk = False  # with a budget, a paged prompt takes each chunk's blocks as it is scheduled (vLLM)
    victim_by_arrival = False  # ties of victim_rank go to the latest arrival, not the latest admission
    # SGLang's (core/engines/sglang.py): a pass that can take a prompt does, and only a decode pass asks for the
    # decoding rows' next blocks; a shortage there retracts `retraction_victims` at once, to the back of the queue.
    prefill_first = retracts_in_bulk = False

    def retraction_victims(self, running: Sequence[tuple[int, int, int]], fits) -> list[int]:
        """Bulk retracters: return whom a decode pass's block shortage retracts, in order.

        `running`: (request, tokens out, prompt tokens) of each decoding request, oldest admission first;
        `fits(victims)`: whether the others' next blocks fit once `victims` have freed theirs.
        """
        raise NotImplementedError(f"{self.name} preempts one victim at a time (victim_rank)")

    def estimate(self, prompts: Sequence[int], max_tokens: Iterable[int], caps: Sequence[int], pool_tokens):
        """Return one run's estimate of the running requests' future tokens that admission leaves room for, or None.

        Requests numbered as given: their prompts, their max_tokens (0: none), the caps a reservation holds (max_tokens
        or the traffic's), and the pool's tokens (None: unlimited). None: admission asks the pool only (SGLang's is
        `NewTokenEstimate`).
        """
        return None

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return whether a request reserves its prompt plus the output cap at admission, not block by block."""
        return allocation == "contiguous"

    def admits_now(self, fitting: int, decoding: int, decodes_since: int, after_pause: bool) -> bool:
        """Gated policies: return whether waiting requests join at this boundary while `decoding` rows decode.

        `fitting`: how many waiting requests this pass would admit (free slots, the pool, the pass's prompt tokens);
        `decodes_since`: decode passes since the last pass that held a prompt; `after_pause`: that pass paused the
        decoding rows and was the last one.
        """
        return True

    def recheck_in(self, decodes_since: int) -> int | None:
        """Gated policies: return after how many more decode passes `admits_now` may change by itself (None: never)."""
        return None

    def prompt_tokens_cap(self, prompts: Sequence[int]) -> int:
        """Return the most prompt tokens one pass admits (0: no cap); a single prompt over it is refused."""
        return 0

    cap_counts_decoders = False  # the cap above counts each decoding row's token too (TensorRT-LLM's max_num_tokens)
    cap_name = ""  # the engine's name for that cap, as a refusal names it

    budget_setting = ""  # the engine setting that holds its tokens a pass ("" : the caller's token_budget)
    shares_budget = True  # a caller's token_budget (--token-budget, the tab's) applies where its own is unset

    def default_budget(self, accelerator: str) -> int | None:
        """Return the engine's own default tokens a pass on `accelerator` (None: none; the caller must give one)."""
        return None

    def pass_budget(self, asked: int | None, accelerator: str, prompts: Sequence[int]) -> int | None:
        """Return its tokens a pass: its own setting where set, else `asked`, else its default (None: no budget)."""
        if not self.has_token_budget:
            return None
        own = getattr(self, self.budget_setting) if self.budget_setting else 0
        return own or asked or self.default_budget(accelerator)

    has_request_cap = True  # the slots stand for its cap on running requests (max_num_seqs); False: it has none

    def request_cap(self, slots: int, requests: int) -> int:
        """Return the most requests it runs at once: the slots, which stand for the engine's own cap (max_num_seqs)."""
        return slots

    def batch_forms_at(self, arrivals: Sequence[float], k: int, slots: int, timeout: float, clock: float) -> float:
        """Batch policies: return when a batch headed by waiting request k forms (arrivals sorted, FCFS)."""
        raise NotImplementedError(f"{self.name} admits between passes; it forms no batches")

    def with_knobs(self, **knobs) -> Policy:
        """Return this policy with some of its engine settings changed; a setting it does not have is refused."""
        unknown = [k for k in knobs if k not in self.knobs]
        if unknown:
            have = ", ".join(self.knobs) or "none"
            raise ValueError(f"{self.name} has no setting {unknown[0]} (its settings: {have})")
        return type(self)(**{**{k: getattr(self, k) for k in self.knobs}, **knobs})

    @property
    def ordered(self) -> bool:
        """Return whether the waiting queue has an order of its own (not arrival)."""
        return self.queue_key(Request("-", 0, 1)) is not None

    def traits(self) -> dict:
        """Return what the app, the replay and the renderer read instead of the name (`TRAITS`, in that order)."""
        fast = {"has_fast_timed": self.fast_timed is not None}  # a trait the object holds as a loop
        return {trait: fast[trait] if trait in fast else getattr(self, trait) for trait in TRAITS}

    def __repr__(self) -> str:
        return f"<policy {self.name}>"


class Continuous(Policy):
    """Continuous batching, first come first served (the base rules, unchanged)."""

    simulator_mode = True

    def fast_steps(self, arrivals: list[int], lengths: list[int], slots: int, timeout: float):
        """Return (start, slot, release) per request in FCFS order on an unlimited pool (step clock)."""
        start, slot = fast_loops.continuous_steps(arrivals, lengths, slots)
        return start, slot, None

    def fast_timed(self, requests, order, slots: int, runner, timeout: float):
        """Return the timed schedule's columns on an unlimited pool, its passes run by `runner`."""
        return fast_loops.continuous_timed(requests, order, slots, runner)


# What one static row reserves, in the page's words wherever it is said (the engine's `_static`: width + reserve).
STATIC_ROW = "the batch's longest prompt plus the cap on answer length (here the traffic's longest answer)"


class Static(Policy):
    """Static batching: a batch forms only when every slot is free, then runs until its longest member finishes.

    With no batch in flight, a batch of up to `slots` waiting requests (first come first served, slots 0, 1, ...)
    forms when the slots can be filled, the oldest has waited `batch_timeout`, or nobody else will arrive. A member
    that finishes early pads its slot until the batch ends. Every row reserves a dense rectangle: the batch's longest
    prompt plus the output cap, whatever the allocation; a batch forms with as many rows as fit the pool.
    """

    name = "static"
    label = "static"
    summary = "form a batch, run it until its longest member finishes"
    forms_batches = True
    has_timeout = True
    versus = "continuous"
    simulator_mode = True

    def fast_steps(self, arrivals: list[int], lengths: list[int], slots: int, timeout: float):
        """Return (start, slot, release) per request in FCFS order on an unlimited pool (step clock)."""
        return fast_loops.static_steps(arrivals, lengths, slots, timeout, self.batch_forms_at)

    def fast_timed(self, requests, order, slots: int, runner, timeout: float):
        """Return the timed schedule's columns on an unlimited pool, its batches run by `runner`."""
        return fast_loops.static_timed(requests, order, slots, runner, timeout, self.batch_forms_at)

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return True: a static row is a dense rectangle, whatever the allocation."""
        return True

    def batch_forms_at(self, arrivals: Sequence[float], k: int, slots: int, timeout: float, clock: float) -> float:
        """Return when the batch headed by k forms: slots fillable, the oldest waited `timeout`, or the last arrival."""
        oldest = arrivals[k]
        full_at = arrivals[k + slots - 1] if k + slots - 1 < len(arrivals) else float("inf")
        return max(clock, oldest, min(full_at, oldest + timeout, arrivals[-1]))


class Chunked(Policy):
    """Chunked prefill: continuous batching whose passes hold at most `token_budget` tokens.

    Every decoding row first, then prompt chunks, oldest admission first; a prompt split over several passes yields
    its first token only in its last chunk's pass.
    """

    name = "chunked"
    label = "chunked prefill"
    summary = "continuous, with prompts split into chunks under a token budget"
    has_token_budget = True
    versus = "continuous"


class ShortestFirst(Policy):
    """Shortest job first: continuous batching whose queue is ordered by output length, shortest first.

    Ties by arrival, then trace order. The simulator knows each request's true length, which no engine does: this is
    what ordering the queue by a perfect length prediction buys, without interrupting anyone running (not the best
    any scheduler could do: one that pauses a long request for a short one can do better, and the longest answers
    wait longer, sometimes running alone at the end). A preempted request rejoins by its length.
    """

    name = "sjf"
    label = "shortest first"
    summary = "continuous, the waiting queue ordered by output length, shortest first (a perfect prediction)"
    versus = "continuous"
    simulator_mode = True
    queue_words = "shortest answer first"
    order_field = "output"
    order_words = "answer length"

    def queue_key(self, request: Request) -> int:
        """Return the output length: shorter first."""
        return request.output_tokens


class Priority(Policy):
    """Priority scheduling (vLLM's `policy=priority`): the waiting queue by `priority`, lower first, then arrival.

    Under a limited pool the victim of a block shortage is the lowest-priority running request (the largest
    number), then the most recently admitted; a preempted request rejoins the queue by its priority.
    """

    name = "priority"
    label = "priority"
    summary = "continuous, the waiting queue by priority (lower first), the lowest class preempted first"
    versus = "continuous"
    simulator_mode = True
    queue_words = "lowest priority number first"
    order_field = "priority"
    order_words = "priority"
    orders_by_class = True
    victim_words = "the lowest class, newest"

    def queue_key(self, request: Request) -> int:
        """Return the request's priority: lower first."""
        return request.priority

    def victim_rank(self, request: Request) -> int:
        """Return the priority: the lowest class (largest number) is preempted first."""
        return request.priority


REGISTRY: dict[str, Policy] = {}
CHAPTER_PAIR = ("static", "continuous")  # the two policies the chapter's lessons compare, in the order it shows them


def register(policy: Policy) -> Policy:
    """Add `policy` to the registry under its name (replacing one of the same name); return it."""
    if not isinstance(policy, Policy):
        raise TypeError(f"register needs a Policy, got {policy!r}")
    if policy.forms_batches and policy.ordered:
        raise ValueError(f"{policy.name}: a batch policy forms its batches first come, first served")
    if policy.ordered and policy.queue_words == Policy.queue_words:  # the page's loop would say "arrival order"
        raise ValueError(f"{policy.name}: an ordered policy says its order in queue_words, not {Policy.queue_words!r}")
    if policy.gates_admission and (policy.ordered or not policy.reserves_whole_life("paged")):
        raise ValueError(f"{policy.name}: a gated policy admits first come, first served, each its whole life")
    REGISTRY[policy.name] = policy
    return policy


def unregister(name: str) -> None:
    """Remove a policy from the registry (tests' toy policies)."""
    REGISTRY.pop(name, None)


for _policy in (
    Static(),
    Continuous(),
    Chunked(),
    ShortestFirst(),
    Priority(),
):
    register(_policy)


def get_policy(name: str | Policy) -> Policy:
    """Return the registered policy called `name`, or refuse the name with the ones allowed."""
    if isinstance(name, Policy):
        return name
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"policy must be one of {', '.join(REGISTRY)}, got {name!r}") from None


def carry_policy(record) -> None:
    """Give a frozen run record its policy both as a name (`policy`) and as the object (`rules`), whichever it got.

    The object travels with the run, settings and all, so nothing downstream looks a name up again: a preset with
    settings keeps its base preset's name, and its lookup would give the base preset's rules.
    """
    given, rules = record.policy, record.rules
    if isinstance(given, Policy):
        rules = given
    elif rules is None or rules.name != given:  # a name alone, or a copy renamed (`dataclasses.replace`)
        rules = get_policy(given)
    object.__setattr__(record, "policy", rules.name)
    object.__setattr__(record, "rules", rules)


def policy_names() -> tuple[str, ...]:
    """Return the registered policies' names, in registration order."""
    return tuple(REGISTRY)
