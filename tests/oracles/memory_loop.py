"""The memory engine's oracle: every slot visited at every step, the pool a list of owners (core/sched/engine.py)."""

from __future__ import annotations

from collections import deque

from core.batch.step_batch import prompt_length
from core.sched.policies import get_policy


def simulate_memory_per_step(requests, slots, policy, memory, batch_timeout=0, token_budget=None):
    """Return (timeline strings, events, recomputed tokens, peak blocks) one step at a time: the engine's oracle.

    The rules of docs/design.md's "Memory contract" written plainly: every slot visited at every step, the pool a list
    of block owners (contiguous runs found by scanning it), nothing jumped. Events are (step, kind, request index).
    The policy is asked only for its rules: its waiting order (`queue_key`), its victims (`victim_rank`), what a
    request reserves, whether it forms batches; the loop that follows them is written here again, plainly, for every
    policy.
    """
    pol = get_policy(policy)
    requests = tuple(requests)
    n = len(requests)
    order = sorted(range(n), key=lambda i: (requests[i].arrival, i))
    prompt = [prompt_length(r.prompt_tokens) for r in requests]
    out = [r.output_tokens for r in requests]
    bs, pool = memory.block_size, memory.kv_blocks
    blocks = lambda tokens: -(-tokens // bs)  # noqa: E731
    reserve = memory.reserve_tokens or max(out, default=1)
    res = [r.max_tokens or reserve for r in requests]  # a continuous reservation: the request's own cap if it has one
    owner = [-1] * (pool or 0)  # contiguous: who holds each block
    held = {}  # request -> blocks
    generated, prefilled, target = [0] * n, [0] * n, [0] * n
    occupant: list[int | None] = [None] * slots
    admitted: list[int] = []  # running requests, oldest admission first
    waiting: deque[int] = deque()
    cols, events, recomputed, peak = [], [], 0, 0
    arrived, done, t = 0, 0, 0
    noted = set()

    def free_blocks():
        return None if pool is None else pool - sum(held.values())

    def fits(i, tokens):
        need = blocks(tokens)
        if pool is None:
            return True
        if memory.allocation == "contiguous":
            return any(all(o == -1 for o in owner[b : b + need]) for b in range(pool - need + 1))
        return need <= free_blocks()

    def take(i, tokens):
        need = blocks(tokens)
        if memory.allocation == "contiguous" and pool is not None:
            b = next(b for b in range(pool - need + 1) if all(o == -1 for o in owner[b : b + need]))
            owner[b : b + need] = [i] * need
        held[i] = need

    def drop(i):
        del held[i]
        for b, o in enumerate(owner):
            if o == i:
                owner[b] = -1

    static = pol.forms_batches
    reserving = pol.reserves_whole_life(memory.allocation)
    keyed = pol.ordered
    # SGLang: an estimate of the running requests' tokens to come (binding on a limited paged pool), lof's order by
    # max_new_tokens (ties: who joined the queue first), a pass that prefills before the decoders ask for blocks, a
    # refusal that holds the queue until a request leaves (batch_is_full), and retraction in bulk to the back.
    est = pol.estimate(prompt, [r.max_tokens for r in requests], res, None if pool is None else pool * bs)
    binds = est is not None and not reserving and pool is not None
    prefill_first = pol.prefill_first and not reserving and pool is not None
    leaves, full = 0, -1  # requests that left (finished or retracted); `leaves` at the last refusal (-1: not full)
    pauses, gated = pol.pauses_decoders, pol.gates_admission
    pcap = pol.prompt_tokens_cap(prompt)
    since, after_pause = 0, False  # decode steps since the last step with a prompt; that step paused the rows

    def would_admit():  # how many waiting requests, from the head, a step would admit (tried on the pool, undone)
        saved_owner, saved_held = owner[:], dict(held)
        count = prompts = 0
        for i in list(waiting):
            if count == occupant.count(None) or (pcap and count and prompts + prompt[i] > pcap):
                break
            tokens = prompt[i] + res[i]
            if not fits(i, tokens):
                break
            take(i, tokens)
            count, prompts = count + 1, prompts + prompt[i]
        owner[:] = saved_owner
        held.clear()
        held.update(saved_held)
        return count

    def head():  # the waiting request the policy serves next (a keyed queue: by key, then arrival and trace order)
        if not keyed:
            return 0
        if est is not None and est.keys is not None:  # SGLang's lof: ties by who joined the queue first
            return min(range(len(waiting)), key=lambda j: (est.keys[waiting[j]], j))
        return min(range(len(waiting)), key=lambda j: (pol.queue_key(requests[waiting[j]]), order.index(waiting[j])))

    def leave(victim):  # a preempted (retracted) request frees its slot and blocks
        nonlocal leaves
        admitted.remove(victim)
        occupant[occupant.index(victim)] = None
        drop(victim)
        events.append((t, "preempt", victim))
        leaves += 1

    def grow():  # decoding requests that outgrew their blocks take one, preempting where none is free
        preempted = False
        if pol.retracts_in_bulk:  # SGLang: the policy's victims at once, to the back, then the others' blocks
            decoding = [i for i in admitted if prefilled[i] == target[i]]  # oldest admission first
            due = [i for i in decoding if blocks(prompt[i] + generated[i] + 1) > held[i]]
            if len(due) > free_blocks():
                rest = lambda vs: sum(i not in vs for i in due) <= free_blocks() + sum(held[v] for v in vs)  # noqa: E731
                for victim in pol.retraction_victims([(i, generated[i], prompt[i]) for i in decoding], rest):
                    leave(victim)
                    waiting.append(victim)
                    preempted = True
                est.retracted([(i, generated[i]) for i in admitted])
            for i in due:
                if i in admitted:
                    held[i] = blocks(prompt[i] + generated[i] + 1)
            return preempted
        for i in list(admitted):  # oldest first: a decoding request that outgrew its blocks takes one
            if i not in admitted or prefilled[i] < target[i]:
                continue
            while blocks(prompt[i] + generated[i] + 1) - held[i] > free_blocks():
                # The policy's least wanted, then the most recently admitted.
                newest = order.index if pol.victim_by_arrival else admitted.index  # vLLM's priority: by arrival
                victim = max(admitted, key=lambda j: (pol.victim_rank(requests[j]), newest(j)))
                leave(victim)
                waiting.appendleft(victim)
                preempted = True
                if victim == i:
                    break
            if i in admitted:
                held[i] = blocks(prompt[i] + generated[i] + 1)
        return preempted

    def room(chunk):  # SGLang: the free tokens less the estimate of the decoders and of the prompts completing now
        decoding = [(i, generated[i]) for i in admitted if prefilled[i] == target[i]]
        completing = [i for i in chunk if prefilled[i] + chunk[i] == target[i]]
        return est.room(free_blocks() * bs, decoding, completing)

    while done < n:
        while arrived < n and requests[order[arrived]].arrival <= t:
            waiting.append(order[arrived])
            arrived += 1
        batch_over = all(o is None or generated[o] == out[o] for o in occupant)
        for s, o in enumerate(occupant):  # retire
            if o is not None and generated[o] == out[o] and (not static or batch_over):
                occupant[s] = None
                admitted.remove(o)
                drop(o)
                leaves += 1
        preempted = False
        if not reserving and pool is not None and not prefill_first:
            preempted = grow()
        left = None if token_budget is None else token_budget
        if left is not None and not pauses:  # a pausing policy's prompt step holds no decoding row
            left -= sum(1 for i in admitted if prefilled[i] == target[i])
        chunk = {}
        per_chunk = pol.allocates_per_chunk and left is not None and not reserving and pool is not None
        for i in list(admitted):  # oldest first: a prompt being chunked, then (vLLM) its chunk's blocks
            if i not in admitted or prefilled[i] == target[i]:
                continue
            c = min(target[i] - prefilled[i], left, pol.prefill_chunk_cap or left)
            need = prefilled[i] + c + (prefilled[i] + c == target[i])  # its first token's too, if the chunk ends it
            while per_chunk and blocks(need) - held[i] > free_blocks():
                newest = order.index if pol.victim_by_arrival else admitted.index
                victim = max(admitted, key=lambda j: (pol.victim_rank(requests[j]), newest(j)))
                admitted.remove(victim)
                occupant[occupant.index(victim)] = None
                drop(victim)
                waiting.appendleft(victim)
                events.append((t, "preempt", victim))
                preempted = True
                if victim in chunk:  # its planned chunk leaves the pass
                    left += chunk.pop(victim)
                elif prefilled[victim] == target[victim]:  # a decoding row leaves the pass
                    left += 1
                if victim == i:
                    break
            if i not in admitted:
                continue
            if per_chunk:
                held[i] = max(held[i], blocks(need))
            chunk[i] = c
            left -= c
        if static:
            if all(o is None for o in occupant) and waiting:
                can_form = len(waiting) >= slots or t - requests[waiting[0]].arrival >= batch_timeout or arrived == n
                size = min(slots, len(waiting)) if can_form else 0
                while pool is not None and size > 1:
                    width = max(prompt[waiting[j]] for j in range(size))
                    if size * blocks(width + reserve) <= pool:
                        break
                    size -= 1
                if size:
                    width = max(prompt[waiting[j]] for j in range(size))
                for s in range(size):
                    i = waiting.popleft()
                    occupant[s] = i
                    admitted.append(i)
                    take(i, width + reserve)
                    target[i] = prefilled[i] = 0
        else:
            limit = n
            decoding = [i for i in admitted if prefilled[i] == target[i]]
            if gated and decoding and waiting and None in occupant and not preempted:
                if not pol.admits_now(would_admit(), len(decoding), since, after_pause):
                    limit = 0
            if binds and full == leaves:  # SGLang's batch_is_full: nobody is admitted until a request leaves
                limit = 0
            taken = prompts = 0
            while not preempted and waiting and None in occupant and (left is None or left > 0) and taken < limit:
                i = waiting[head()]
                rows = len(decoding) if pol.cap_counts_decoders else 0  # TensorRT-LLM: each decoding row's token
                if pcap and (taken or rows) and prompts + prompt[i] + generated[i] + rows > pcap:
                    break
                tokens = prompt[i] + (res[i] if reserving else generated[i] + 1)
                if per_chunk:  # its first chunk's blocks, and its first token's if the chunk ends the prompt
                    c = min(prompt[i] + generated[i], left, pol.prefill_chunk_cap or left)
                    tokens = c + (c == prompt[i] + generated[i])
                if not fits(i, tokens) or binds and not est.admits(i, generated[i], room(chunk)):
                    if i not in noted:
                        noted.add(i)
                        events.append((t, "blocked", i))
                    full = leaves  # SGLang's batch_is_full (read only where the estimate binds)
                    break
                waiting.remove(i)
                taken, prompts = taken + 1, prompts + prompt[i] + generated[i]
                noted.discard(i)
                take(i, tokens)
                occupant[occupant.index(None)] = i
                admitted.append(i)
                recomputed += generated[i]
                target[i], prefilled[i] = prompt[i] + generated[i], 0
                chunk[i] = target[i] if left is None else min(target[i], left, pol.prefill_chunk_cap or left)
                if left is not None:
                    left -= chunk[i]
                if binds and room(chunk) <= 0:  # SGLang: the estimate is spent (PrefillAdder.budget_state)
                    full = leaves
                    break
        retracted = prefill_first and not chunk and grow()  # SGLang: only a decode step asks for the rows' blocks
        if est is not None and not chunk:  # SGLang's ratio: a decode step decays it (not one that retracted)
            if any(o is not None for o in occupant):
                est.decoded(0 if retracted else 1)
            else:
                est.reset()  # nothing runs: self_check_during_idle
        peak = max(peak, sum(held.values()))
        col = []
        paused = pauses and bool(chunk) and any(o is not None and o not in chunk for o in occupant)
        since, after_pause = (0, paused) if chunk else (since + 1, False)
        for o in occupant:  # one pass
            if o is None:
                col.append(".")
            elif generated[o] == out[o]:
                col.append("P")
            elif paused and o not in chunk:
                col.append("Z")
            elif o in chunk:
                prefilled[o] += chunk[o]
                if prefilled[o] < target[o]:
                    col.append("F")
                    continue
                col.append("R" if generated[o] else "G")
                generated[o] += 1
                done += generated[o] == out[o]
            else:
                col.append("G")
                generated[o] += 1
                done += generated[o] == out[o]
        if binds and any(prefilled[i] < target[i] for i in admitted):  # SGLang: a chunked request left the step's
            full = -1  # batch, which clears batch_is_full (get_next_batch_to_run)
        cols.append(col)
        t += 1
    strings = ["".join(col[s] for col in cols) for s in range(slots)]
    return strings, events, recomputed, peak
