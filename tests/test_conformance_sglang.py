"""Conformance table of SGLang: small traces whose schedules are derived by hand from SGLang's scheduler code.

Each case cites the file and function it follows, at the commit read (the stored copies of sgl-project/sglang read
for issue 45: schedule_policy.py at ad0119fd, scheduler.py and schedule_batch.py at 000eaffa, tp_worker.py at
0045f98e, global_config.py at 025ea29a; python/sglang/srt/environ.py of later commits keeps the same defaults). The
expected passes in each docstring are worked out from that code on the unit clock (a pass is a step), on our pool's
accounting: a running request holds blocks for its prompt and every token it has generated, the one a pass generates
included (SGLang writes the newest token's KV at the next decode step), and a prompt takes its blocks at admission.
Blocks of 1 stand for SGLang's default page_size of 1. A finished request leaves at the next boundary (SGLang's
non-overlap loop notices it at its next decode step, a pass later when the batch was full). The arithmetic uses
SGLang's defaults: new_token_ratio 0.7 at first, floor 0.7 x 0.14 = 0.098, decay (0.7 - 0.098) / 600 a decode pass,
estimates clipped at 4096 tokens, retract_decode_steps 20. The rest of what is simplified is docs/schedulers.md's.
"""

import pytest

from core import Request as R
from core.engines.sglang import CLIP_MAX_NEW_TOKENS, SGLang
from core.kv.memory import UNLIMITED, MemoryConfig
from core.sched.engine import as_run, schedule
from core.sched.policies import get_policy
from tests.oracles.memory_loop import simulate_memory_per_step

POLICY = "sgl-project/sglang@ad0119fd, python/sglang/srt/managers/schedule_policy.py"
SCHEDULER = "sgl-project/sglang@000eaffa, python/sglang/srt/managers/scheduler.py"
BATCH = "sgl-project/sglang@000eaffa, python/sglang/srt/managers/schedule_batch.py"
WORKER = "sgl-project/sglang@0045f98e, python/sglang/srt/managers/tp_worker.py"
GLOBAL = "sgl-project/sglang@025ea29a, python/sglang/global_config.py"

DECAY = (0.7 - 0.7 * 0.14) / 600  # GlobalConfig: default_new_token_ratio_decay_steps 600


def events(s) -> list[tuple[int, str, int]]:
    """Return the schedule's events as (pass, kind, request in trace order)."""
    return [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events]


def pool(blocks: int, block_size: int = 1) -> MemoryConfig:
    """A paged pool of `blocks` blocks."""
    return MemoryConfig(kv_blocks=blocks, block_size=block_size)


def run(reqs, slots: int, memory: MemoryConfig = UNLIMITED, policy="sglang"):
    """Return the schedule (a budget of 64 prompt tokens a pass), checked against the per-step oracle on the way."""
    s = schedule(reqs, slots, policy, memory, token_budget=64)
    strings, oracle_events, recomputed, _ = simulate_memory_per_step(reqs, slots, policy, memory, 0, 64)
    assert as_run(s).timeline_strings() == strings and events(s) == oracle_events
    assert s.recomputed_tokens == recomputed
    return s


RESERVATION_TRACE = [R("A", 0, 10, 4, 0, 10), R("B", 1, 2, 4, 0, 2)]


def test_sglang_admits_only_what_leaves_room_for_the_running_requests_future_tokens():
    """A request starts only if its tokens fit beside the running requests' estimated tokens to come.

    PrefillAdder.add_one_req (POLICY): `total_tokens = extend_input_len + min(max(max_new_tokens - len(output_ids),
    0), CLIP_MAX_NEW_TOKENS)`; `if total_tokens >= self.rem_total_tokens: return AddReqResult.NO_TOKEN`, where
    rem_total_tokens is the free (and evictable) tokens less rem_total_token_offset, which starts at every running
    request's `min(max_new_tokens - len(output_ids), CLIP_MAX_NEW_TOKENS) * self.new_token_ratio`
    (_get_running_request_total_token_offset).

    A pool of 16 one-token blocks. A (4-token prompt, max_tokens 10) needs 4 + 10 = 14 < 16: admitted at 0, holding
    5. At 1 B (4 + 2 = 6) arrives: A has 9 tokens to go, 9 x 0.7 = 6.3 reserved, so 16 - 5 - 6.3 = 4.7 < 6: refused
    (a blocked event), though its 5 blocks are free. B starts when A leaves, at 10. The previous preset (prompt plus
    one token) admitted B at 1.
    """
    s = run(RESERVATION_TRACE, 2, pool(16))
    assert s.start_pass.tolist() == [0, 10] and s.finish_pass.tolist() == [10, 12]
    assert events(s) == [(1, "blocked", 1)] and s.preemptions == 0


def test_sglang_reservation_never_binds_on_an_unlimited_pool():
    """The same trace on the default, unlimited pool: nothing is refused, B starts at 1 (its prompt pauses A)."""
    s = run(RESERVATION_TRACE, 2)
    assert s.start_pass.tolist() == [0, 1] and events(s) == []


def test_sglang_new_token_ratio_decays_a_step_each_decode_pass():
    """The new_token_ratio loses a decay step each decode pass, so a head refused early fits later.

    Scheduler.update_running_batch (SCHEDULER): a decode pass without retraction sets `self.new_token_ratio =
    max(self.new_token_ratio - self.new_token_ratio_decay, self.min_new_token_ratio)`; prefill passes leave it.

    A pool of 420. A (1-token prompt, max_tokens 300) and C (max_tokens 100) are admitted at 0 (1 + 300 = 301 < 420;
    then 1 + 100 < 420 - 2 - 300 = 118). At 1 B (max_tokens 185: needs 186) arrives: 416 free, (299 + 99) x 0.7 =
    278.6 reserved, 137.4 < 186: refused, and batch_is_full holds the queue until a request leaves. C finishes at 100:
    after 99 decode passes the ratio is 0.7 - 99 x 0.001003 = 0.6007; A holds 101 and has 200 to go, so 420 - 101 -
    200 x 0.6007 = 198.9 > 186: B starts at 100. At 0.7 it would be 179 < 186, and B would wait for A (301).
    """
    reqs = [R("A", 0, 300, 1, 0, 300), R("C", 0, 100, 1, 0, 100), R("B", 1, 1, 1, 0, 185)]
    s = run(reqs, 3, pool(420))
    assert s.start_pass.tolist() == [0, 0, 100] and events(s) == [(1, "blocked", 2)]


def test_sglang_a_refusal_holds_the_queue_until_a_request_leaves():
    """After a refusal nobody is admitted until a request leaves, though the decaying ratio would let it in.

    Scheduler.get_new_batch_prefill (SCHEDULER): NO_TOKEN sets `self.running_batch.batch_is_full = True`, and
    `if (self.running_batch.batch_is_full or len(self.waiting_queue) == 0) and self.chunked_req is None: return None`;
    update_running_batch clears it only `if batch.batch_size() < initial_bs`.

    Blocks of 16, a pool of 437 (6,992 tokens): max_req_len is 6,991 and A (15-token prompt, max_tokens 9,000) may
    generate 6,975, its estimate clipped at 4,096 (15 + 4,096 < 6,992: admitted at 0). At 1 B (15 + 4,095 = 4,110)
    arrives: 436 blocks free (6,976), 4,096 x 0.7 = 2,867.2 reserved, 4,108.8 <= 4,110: refused. A's estimate stays
    at 4,096 while the ratio decays, so from 6 on B would fit (6,960 - 4,096 x (0.7 - 5 x 0.001003) = 4,113.4), but
    nobody is asked until A leaves, at 20.
    """
    reqs = [R("A", 0, 20, 15, 0, 9000), R("B", 1, 2, 15, 0, 4095)]
    s = run(reqs, 2, pool(437, 16))
    assert s.start_pass.tolist() == [0, 20] and events(s) == [(1, "blocked", 1)]


def test_sglang_retracts_the_fewest_tokens_out_in_bulk_and_resets_the_ratio():
    """A shortage retracts the fewest tokens out (ties: the longest prompt) at once, and the ratio is reset.

    ScheduleBatch.retract_decode (BATCH): `sorted_indices.sort(key=lambda i: (len(self.reqs[i].output_ids),
    -len(self.reqs[i].origin_input_ids)), reverse=True)`, then `while first_iter or (not self.check_decode_mem(
    selected_indices=sorted_indices))`: `idx = sorted_indices.pop()` (the fewest tokens out; ties: the longest
    prompt; then the last in the batch); returns `min(1.0, (total_decoded_tokens + retract_decode_steps *
    len(self.reqs)) / total_max_new_tokens)` over the requests kept, which update_running_batch makes the ratio.

    A pool of 628. L (1-token prompt, 609 tokens out) decodes alone for 602 passes: the ratio reaches its floor,
    0.098. B (max_tokens 11) is admitted at 603, D (4-token prompt, 5) and E (1-token prompt, 7) together at 604, W
    (3) at 607 (7 free, 0.098 x 18 reserved: 4 < 5.24). At 609 all five need a block and none is free. The order is
    W (2 tokens out), then D (4 out, the longest prompt of the three with 4; E was admitted after it), E, B, L: W
    frees 3 blocks, not enough for the other four; D frees 8: two retracted at once, in that order, to the back of
    the queue. The ratio becomes min(1, (606 + 4 + 4 + 3 x 20) / (609 + 11 + 7)) = 1, so at 610 W (1 + 2 + 1 = 4)
    is refused: 8 free, (2 + 6 + 2) x 1 reserved. L and E finish at 612, where W and D recompute 3 and 8 tokens.
    """
    reqs = [R("L", 0, 609, 1, 0, 609), R("B", 603, 11, 1, 0, 11), R("D", 604, 5, 4, 0, 5), R("E", 604, 7, 1, 0, 7)]
    reqs.append(R("W", 607, 3, 1, 0, 3))
    s = run(reqs, 6, pool(628))
    assert events(s) == [(609, "preempt", 4), (609, "preempt", 2), (610, "blocked", 4)]
    assert s.start_pass.tolist() == [0, 603, 604, 604, 607] and s.finish_pass.tolist() == [612, 617, 613, 612, 613]
    assert s.recomputed_tokens == 2 + 4


def test_sglang_requeues_the_retracted_at_the_back():
    """A retracted request goes to the back of the queue, behind those already waiting.

    Scheduler.update_running_batch (SCHEDULER): `self._extend_requests_to_queue(retracted_reqs,
    is_retracted=True)`, which does `self.waiting_queue.append(req)`: behind everyone waiting.

    Blocks of 4, a pool of 4, 2 slots. A (3-token prompt, max_tokens 3) is admitted at 0; B (6-token prompt, 3) at 1
    (6 + 3 = 9 < 12 - 2 x 0.7) takes the second slot, and C (4-token prompt, 7) waits. At 3 B needs a third block and
    none is free: A and B have 2 tokens out, B has the longer prompt: B is retracted, behind C. A leaves at 4: C is
    admitted (4 + 7 = 11 < 16), then B (6 + 2 + 1 = 9) is refused: 8 tokens free, 7 charged to C. B waits for C
    (11). The previous preset put B back at the front, ahead of C.
    """
    reqs = [R("A", 0, 3, 3, 0, 3), R("B", 1, 3, 6, 0, 3), R("C", 1, 7, 4, 0, 7)]
    s = run(reqs, 2, pool(4, 4))
    assert events(s) == [(3, "preempt", 1), (4, "blocked", 1)]
    assert s.start_pass.tolist() == [0, 1, 4] and s.finish_pass.tolist() == [4, 12, 11]


LOF_TRACE = [R("A", 0, 5, 4), R("B", 1, 3, 1, 0, 10), R("C", 2, 3, 2), R("D", 3, 3, 1, 0, 20)]


def test_sglang_lof_puts_a_request_without_max_tokens_first():
    """Under lof a request without max_tokens goes first: its max_new_tokens is what its context leaves.

    Scheduler.init_req_max_new_tokens (SCHEDULER): `min(max_new_tokens if not None else 1 << 30, self.max_req_len -
    len(req.origin_input_ids) - 1)`; TpModelWorker.__init__ (WORKER): `max_req_len = min(context_len - 1,
    max_total_num_tokens - 1)`; SchedulePolicy._sort_by_longest_output (POLICY): `-x.sampling_params.max_new_tokens`.

    Our traffic has no context length: it stands for the longest prompt plus the largest cap plus 2 (4 + 20 + 2),
    so max_req_len is 25 and C, without max_tokens, may generate 25 - 2 - 1 = 22: ahead of D (20) and B (10). One
    slot; A runs 0-5, then C, D, B. On a pool of 22 blocks max_req_len is 21: C's 18 falls behind D's 19.
    """
    lof = SGLang("lof")
    assert run(LOF_TRACE, 1, policy=lof).start_pass.tolist() == [0, 11, 5, 8]
    assert run(LOF_TRACE, 1).start_pass.tolist() == [0, 5, 8, 11]
    assert run(LOF_TRACE, 1, pool(22), lof).start_pass.tolist() == [0, 11, 8, 5]


def test_sglang_defaults_clip_estimates_at_4096_and_decay_from_0_7():
    """SGLang's defaults: estimates clipped at 4096, the ratio from 0.7 down by 1/600 of the way to 0.098 a pass.

    CLIP_MAX_NEW_TOKENS (POLICY) 4096; GlobalConfig (GLOBAL): default_init_new_token_ratio 0.7,
    default_min_new_token_ratio_factor 0.14, default_new_token_ratio_decay_steps 600, retract_decode_steps 20;
    ServerArgs: schedule_conservativeness 1.0, schedule_policy fcfs.

    Blocks of 16, a pool of 380 (6,080 tokens). A (15-token prompt, max_tokens 6,000) and S (15, 2) are admitted at
    0. At 1 B (15 + 3,168 = 3,183) arrives: 378 blocks free (6,048), (4,096 clipped + 1) x 0.7 = 2,867.9 reserved:
    3,180.1 < 3,183, refused. S leaves at 2 after one decode pass: 6,048 free, 4,096 x (0.7 - 0.001003) = 2,863.1
    reserved: 3,184.9 > 3,183, B starts at 2 (unclipped, or without the decay step, it would wait for A).
    """
    reqs = [R("A", 0, 10, 15, 0, 6000), R("S", 0, 2, 15, 0, 2), R("B", 1, 2, 15, 0, 3168)]
    s = run(reqs, 3, pool(380, 16))
    assert s.start_pass.tolist() == [0, 0, 2] and events(s) == [(1, "blocked", 2)]
    assert CLIP_MAX_NEW_TOKENS == 4096 and get_policy("sglang").schedule_policy == "fcfs"
    est = SGLang().estimate([1, 1], [0, 0], [5000, 5000], None)
    assert est.ratio == pytest.approx(0.7)
    est.decoded(1)
    assert est.ratio == pytest.approx(0.7 - DECAY)
    est.decoded(599)
    assert est.ratio == pytest.approx(0.098)
    est.decoded(1)
    assert est.ratio == pytest.approx(0.098)  # the floor
    est.retracted([(0, 100)])  # one kept request, 100 tokens out of a max_new_tokens of 5,000 (the traffic's cap)
    assert est.ratio == pytest.approx((100 + 20) / 5000)
    est.reset()
    assert est.ratio == pytest.approx(0.7)
