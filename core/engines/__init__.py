"""Real engines' schedulers as policies (vLLM, TensorRT-LLM, TGI, SGLang), registered when `core` is imported.

Each preset is one policy object over the same loop (core/sched/), with the engine's own settings declared once
(core/sched/settings.py); docs/schedulers.md says what each one simplifies.
"""

from core.engines.sglang import SGLang
from core.engines.tgi import TGI
from core.engines.trtllm import TrtllmMaxUtil, TrtllmNoEvict
from core.engines.vllm import VLLM
from core.sched.policies import register

for _preset in (VLLM(), TrtllmNoEvict(), TrtllmMaxUtil(), TGI(), SGLang()):
    register(_preset)

__all__ = ["SGLang", "TGI", "TrtllmMaxUtil", "TrtllmNoEvict", "VLLM"]
