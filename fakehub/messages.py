# ruff: noqa: E501  (real error messages are long lines)
"""Failure messages per category, in the many shapes real tools print them.

Each form is a block of lines; the line starting with `>>` is the one that shows the category
(ground truth for the classifier tests). Fields in braces are filled per job, so no two logs need
to look alike. The formats follow what PyTorch, vLLM, Ray, NCCL, pip, uv, bash, torch_npu/CANN
and the Actions runner print; the texts are written for fakehub.
"""

from __future__ import annotations

from datetime import datetime
from random import Random
from typing import Any

FORMS: dict[str, tuple[str, ...]] = {
    "oom": (
        """{ray}Traceback (most recent call last):
{ray}  File "/home/runner/verl/verl/workers/fsdp_workers.py", line {ln}, in update_actor
{ray}    metrics = self.actor.update_policy(data=data)
{ray}  File "/home/runner/verl/verl/workers/actor/dp_actor.py", line {ln2}, in update_policy
{ray}    loss.backward()
>>{ray}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib} GiB. GPU {gpu} has a total capacity of 44.39 GiB of which {mib} MiB is free. Including non-PyTorch memory, this process has 43.{d2} GiB memory in use. Of the allocated memory 39.{d2} GiB is allocated by PyTorch, and {mib2} MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.""",
        """{ray}ERROR worker.py:{ln} -- Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.actor_rollout_compute_log_prob()
{ray}  File "/home/runner/verl/verl/single_controller/ray/base.py", line {ln2}, in func
{ray}    return getattr(self.worker_dict[key], name)(*args, **kwargs)
>>{ray}torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {mib} MiB (GPU {gpu}; 44.39 GiB total capacity; 41.{d2} GiB already allocated; {mib2} MiB free; 42.{d2} GiB reserved in total by PyTorch)""",
        """{ray}INFO {hms} [gpu_model_runner.py:{ln}] Model loading took 0.93 GiB and {sec} seconds
{ray}INFO {hms} [kv_cache_utils.py:{ln2}] GPU KV cache size: 0 tokens
>>{ray}ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.""",
        """{ray}ERROR {hms} [core.py:{ln}] EngineCore failed to start.
>>{ray}ValueError: To serve at least one request with the models's max seq len (8192), (1.{d2} GiB KV cache is needed, which is larger than the available KV cache memory (0.{d2} GiB). Based on the available memory, the estimated maximum model length is {tokens}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.""",
        """(raylet) [{date} {hms},{ms3} E {pid} {pid2}] (raylet) node_manager.cc:{ln} 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: {hex8}, IP: 10.0.{b}.{c}) over the last time period.
>>ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.0.{b}.{c}, ID: {hex8}) where the task (actor ID: {hex8}, name=WorkerDict.__init__) was running was 235.{d2}GB / 247.{d2}GB (0.95), which exceeds the memory usage threshold of 0.95.""",
        """+ python3 -m verl.experimental.fully_async_policy.fully_async_main trainer.total_training_steps=2
>>tests/special_e2e/run_{algo}.sh: line {ln}: {pid} Killed                  python3 -m verl.trainer.main_ppo trainer.total_training_steps=2""",
        """{ray}Traceback (most recent call last):
{ray}  File "/usr/local/lib/python3.11/site-packages/torch_npu/npu/memory.py", line {ln}, in empty_cache
>>{ray}RuntimeError: NPU out of memory. Tried to allocate {gib} GiB (NPU {gpu}; 60.{d2} GiB total capacity; 57.{d2} GiB already allocated; 58.{d2} GiB current active; {mib} MiB free; 58.{d2} GiB reserved in total by PyTorch)""",
        """{ray}[rank{rank}]: Traceback (most recent call last):
{ray}[rank{rank}]:   File "/home/runner/verl/verl/workers/rollout/vllm_rollout/vllm_rollout.py", line {ln}, in wake_up
>>{ray}[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {mib} MiB. GPU {gpu} has a total capacity of 44.39 GiB of which {mib2} MiB is free.""",
    ),
    "missing_dependency": (
        """{ray}Traceback (most recent call last):
{ray}  File "/home/runner/verl/verl/models/mcore/__init__.py", line {ln}, in <module>
{ray}    from megatron.core import parallel_state as mpu
>>{ray}ModuleNotFoundError: No module named 'megatron'""",
        """Traceback (most recent call last):
  File "/home/runner/verl/verl/experimental/transfer_queue/client.py", line {ln}, in <module>
>>ModuleNotFoundError: No module named 'transfer_queue'""",
        """>>ImportError: cannot import name '{symbol}' from 'transformers.{module}' (/usr/local/lib/python3.12/dist-packages/transformers/{module}.py)""",
        """Collecting TransferQueue==0.1.{minor} (from -r requirements.txt (line {ln}))
>>ERROR: Could not find a version that satisfies the requirement TransferQueue==0.1.{minor} (from versions: 0.1.5, 0.1.6, 0.1.7, 0.1.8)
ERROR: No matching distribution found for TransferQueue==0.1.{minor}""",
        """The conflict is caused by:
    The user requested numpy<2.0.0
    vllm 0.{vminor}.0 depends on numpy>=2.0.0
>>ERROR: Cannot install -r requirements.txt (line {ln}) and numpy<2.0.0 because these package versions have conflicting dependencies.
ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts""",
        """{ray}  File "/usr/local/lib/python3.12/dist-packages/cupy/__init__.py", line {ln}, in <module>
>>{ray}ImportError: libcudart.so.12: cannot open shared object file: No such file or directory""",
        """  × No solution found when resolving dependencies:
>>  ╰─▶ Because only mbridge<=0.15.{minor} is available and verl[megatron] depends on mbridge>=0.16.0, we can conclude that verl[megatron]'s requirements are unsatisfiable.""",
        """>>error: Distribution `flash-attn==2.8.{minor} @ registry+https://pypi.org/simple` can't be installed because it doesn't have a source distribution or wheel for the current platform""",
        """{ray}  File "/usr/local/lib/python3.12/dist-packages/transformer_engine/pytorch/__init__.py", line {ln}, in <module>
>>{ray}ImportError: /usr/local/lib/python3.12/dist-packages/transformer_engine_torch.cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev""",
    ),
    "npu_env": (
        """+ npu-smi info
>>dcmi model initialized failed, because the device is used. ret is -8020
npu-smi info failed""",
        """{ray}Traceback (most recent call last):
{ray}  File "/usr/local/lib/python3.11/site-packages/torch_npu/npu/utils.py", line {ln}, in set_device
>>{ray}RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:{ln2} NPU function error: c10_npu::acl::AclrtSetDevice(device_id_), error code is 507033""",
        """{ray}[ERROR] {date}-{hms}.{ms3}.{ms3} [npu_stream.cpp:{ln}] rtStreamSynchronize execute failed, reason=[driver error:internal error]
>>{ray}RuntimeError: ACL stream synchronize failed, error code:507035
{ray}E39999: Inner Error!""",
        """>>{ray}RuntimeError: HCCL function error: HcclCommInitRootInfo(numRanks, &rootInfo, rank, &comm), error code is 7
{ray}[ERROR] HCCL({pid},python):{date}-{hms}.{ms3}.{ms3} [topoinfo_detect.cc:{ln}] [TopoInfoDetect] connect to server timeout""",
        """+ cat /usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info
>>cat: /usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info: No such file or directory""",
        """{ray}EZ9999: Inner Error!
>>{ray}EZ9999: [PID: {pid}] {date}-{hms}.{ms3}.{ms3} The driver version does not match the CANN version. Driver version: 24.1.rc{minor}, CANN requires >= 25.0.rc1.""",
        """>>{ray}RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:{ln} NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507899
{ray}[ERROR] {date}-{hms} (PID:{pid}, Device:{gpu}, RankID:{rank}) ERR00100 PTA call acl api failed""",
    ),
    "timeout": (
        """>>##[error]The job running on runner {runner} has exceeded the maximum execution time of {limit} minutes.
##[error]The operation was canceled.""",
        """{ray}[rank{rank}]:[E{date4} {hms}.{ms3} ProcessGroupNCCL.cpp:{ln}] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600{ms3} milliseconds before timing out.
>>##[error]The job running on runner {runner} has exceeded the maximum execution time of {limit} minutes.""",
        """{ray}Traceback (most recent call last):
{ray}  File "/home/runner/verl/verl/experimental/agent_loop/agent_loop.py", line {ln}, in generate_sequences
>>{ray}ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.""",
        """>>torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. {rank}/8 clients joined.""",
    ),
    "network": (
        """>>{ray}requests.exceptions.ConnectionError: HTTPSConnectionPool(host='hf-mirror.com', port=443): Max retries exceeded with url: /api/models/Qwen/Qwen2.5-0.5B-Instruct/revision/main (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f{hex8}>: Failed to establish a new connection: [Errno 111] Connection refused'))""",
        """  Cloning https://github.com/ISEEKYAN/mbridge.git (to revision main) to /tmp/pip-req-build-{hex8}
  Running command git clone --filter=blob:none --quiet https://github.com/ISEEKYAN/mbridge.git /tmp/pip-req-build-{hex8}
>>  fatal: unable to access 'https://github.com/ISEEKYAN/mbridge.git/': GnuTLS recv error (-110): The TLS connection was non-properly terminated.
  error: subprocess-exited-with-error""",
        """WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ReadTimeoutError("HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out. (read timeout=15)")': /packages/{hex8}/
>>ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Max retries exceeded with url: /packages/{hex8}/torchdata-0.11.0-py3-none-any.whl (Caused by ProxyError('Unable to connect to proxy', RemoteDisconnected('Remote end closed connection without response')))""",
        """>>huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://hf-mirror.com/api/datasets/openai/gsm8k/revision/main""",
        """>>curl: (56) Recv failure: Connection reset by peer""",
        """  × Failed to download `nvidia-cudnn-cu13==9.13.0.50`
  ├─▶ Failed to fetch: `https://pypi.nvidia.com/nvidia-cudnn-cu13/`
>>  ╰─▶ error sending request for url (https://pypi.nvidia.com/nvidia-cudnn-cu13/): operation timed out""",
        """>>ERROR: HTTP error 503 while getting http://pypi-cache.ascend-ci.svc:8080/simple/transferqueue/ (from http://pypi-cache.ascend-ci.svc:8080/simple/)""",
    ),
    "distributed": (
        """{ray}[rank{rank}]: Traceback (most recent call last):
>>{ray}[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:{ln}, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.{minor}
{ray}[rank{rank}]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.""",
        """>>ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
	class_name: create_colocated_worker_cls.<locals>.WorkerDict
	actor_id: {hex8}{hex8}
	pid: {pid}
	The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.""",
        """{ray}*** SIGSEGV received at time={epoch} on cpu {cpu} ***
{ray}PC: @     0x7f{hex8}  (unknown)  ncclProxyService()
>>{ray}Fatal Python error: Segmentation fault in ncclProxyService (NCCL cuMem host allocation)""",
        """>>torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
verl/trainer/main_ppo.py FAILED""",
        """>>{ray}RuntimeError: [{rank}] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer""",
        """>>ray.exceptions.RaySystemError: System error: Failed to connect to GCS at address 10.0.{b}.{c}:6379 within 60 seconds.""",
    ),
    "ci_config": (
        """>>Invalid GPU split: total=8, training={train}, rollout={roll}""",
        """>>Unknown ACTOR_STRATEGY=fsdp; expected fsdp2 or megatron""",
        """>>Error: Unknown strategy fsdp. Please use 'fsdp2' or 'megatron'""",
        """>>Training GPUs must be even and rollout GPUs must be divisible by ROLLOUT_TP""",
    ),
    "test_failure": (
        """>>AssertionError: expected critic/score/mean > 0.1 after 2 steps, got 0.0{d2}""",
        """{ray}  File "/home/runner/verl/verl/trainer/ppo/v1/separate_async.py", line {ln}, in fit
>>{ray}KeyError: 'actor/pg_loss'""",
        """FAILED tests/experimental/trtllm/test_async_rollout.py::test_{symbol_l} - AssertionError: assert {rank} == {rank2}
>>=================== 1 failed, {passed} passed, 3 warnings in {sec}.{d2}s ===================""",
        """{ray}  File "/home/runner/verl/verl/experimental/separation/param_sync.py", line {ln}, in sync_weights
>>{ray}RuntimeError: The size of tensor a ({tokens}) must match the size of tensor b (1024) at non-singleton dimension 1""",
        """>>{ray}TypeError: SeparateAsyncTrainer.__init__() got an unexpected keyword argument '{symbol_l}'""",
        """>>{ray}AssertionError: rollout and trainer weights differ after sync: max abs diff 0.{d2}31 > 1e-3""",
    ),
    "infra": (
        """>>##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.
##[error]The operation was canceled.""",
        """>>##[error]The self-hosted runner: {runner} lost communication with the server. Verify the machine is running and has a healthy network connection. Anything in your workflow that terminates the runner process, starves it for CPU/Memory, or blocks its network access can cause this error.""",
        """>>OSError: [Errno 28] No space left on device: '/home/runner/.cache/huggingface/hub/tmp{hex8}'""",
        """>>docker: Error response from daemon: Get "https://swr.cn-south-1.myhuaweicloud.com/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers).""",
        """>>Error: failed to create runner: create instance failed: ResourceNotEnough: the requested flavor L20x8 is sold out in zone cn-beijing-{zone}""",
        """>>##[error]Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: unable to start container process: error during container init: error mounting "/usr/local/Ascend/driver": no such file or directory""",
    ),
    "unknown": (
        """>>terminate called after throwing an instance of 'c10::Error'
  what():  invalid device pointer: 0x7f{hex8}""",
        """>>Aborted (core dumped)""",
        """>>{ray}[{date} {hms},{ms3} E {pid}] core_worker.cc:{ln}: Unexpected error while processing the task""",
    ),
}
SETUP_FAILURES = (FORMS["infra"][4], FORMS["infra"][0])
# A timeout fails in one of three ways (fakehub.failures.failure_cause): GitHub cancels the job at
# its `timeout-minutes`, a step's own `timeout-minutes` kills the step (the runner prints "The
# action '<step>' has timed out after N minutes.", actions/runner StepsRunner.cs), or a
# collective or test timeout inside the job fails it first.
TIMEOUT_FORMS = {
    "job_time_limit": FORMS["timeout"][:2],
    "step_time_limit": (
        """{ray}INFO {hms} [ray_trainer.py:{ln}] step:{seq} - waiting for rollout workers
>>##[error]The action '{step}' has timed out after {step_minutes} minutes.""",
    ),
    "inner_timeout": FORMS["timeout"][2:],
}
# A step that checks its imports and prints one `::error::` command per missing module: GitHub
# shows each as a `##[error]` line and keeps the first 10 of the step as annotations.
MODULE_CHECK = "Checking that every optional dependency imports\n" + "\n".join(
    ("" if i else ">>") + f"##[error]ModuleNotFoundError: No module named '{name}'"
    for i, name in enumerate(
        (
            "transfer_queue",
            "mbridge",
            "megatron",
            "flash_attn",
            "liger_kernel",
            "sglang",
            "vllm",
            "math_verify",
            "qwen_vl_utils",
            "tensordict",
            "torchdata",
            "pylatexenc",
        )
    )
)
FORMS["missing_dependency"] = (*FORMS["missing_dependency"], MODULE_CHECK)
MISSING_SCRIPT = (
    """+ bash tests/special_npu/run_fully_async_policy.sh
>>bash: tests/special_npu/run_fully_async_policy.sh: No such file or directory""",
)
EXIT_CODES = {"ci_config": (1, 2), "infra": (1, 143)}
SYMBOLS = ("AutoModelForVision2Seq", "is_torch_fx_available", "GenerationMixin", "Qwen2VLConfig")
MODULES = ("modeling_utils", "utils.import_utils", "generation.utils", "models.auto")


def context(rng: Random, runner: str, limit: int, algo: str, at: datetime) -> dict[str, Any]:
    """Random but plausible values for one job's messages."""
    pid = rng.randint(1200, 99000)
    ray = rng.choice(
        (
            "",
            "",
            f"(WorkerDict pid={pid}) ",
            f"(TaskRunner pid={pid}) ",
            f"\x1b[36m(WorkerDict pid={pid}, ip=10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)})\x1b[0m ",
        )
    )
    return {
        "ray": ray,
        "pid": pid,
        "pid2": rng.randint(1200, 99000),
        "ln": rng.randint(40, 1900),
        "ln2": rng.randint(40, 900),
        "gib": f"{rng.uniform(0.5, 12):.2f}",
        "gpu": rng.randint(0, 7),
        "mib": rng.randint(8, 900),
        "mib2": rng.randint(20, 900),
        "d2": f"{rng.randint(0, 99):02d}",
        "tokens": rng.choice((2048, 3072, 4096, 5120)),
        "hms": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        "ms3": f"{rng.randint(0, 999):03d}",
        "date": at.strftime("%Y-%m-%d"),
        "date4": at.strftime("%m%d"),
        "sec": rng.randint(5, 300),
        "b": rng.randint(0, 9),
        "c": rng.randint(2, 250),
        "hex8": f"{rng.getrandbits(32):08x}",
        "rank": rng.randint(0, 7),
        "rank2": rng.randint(0, 7),
        "minor": rng.randint(0, 9),
        "vminor": rng.randint(18, 24),
        "symbol": rng.choice(SYMBOLS),
        "symbol_l": rng.choice(("rollout_config", "sync_mode", "staleness", "bucket_mb")),
        "module": rng.choice(MODULES),
        "runner": runner,
        "limit": limit,
        "algo": algo,
        "seq": rng.randint(20, 4000),
        "epoch": rng.randint(1_780_000_000, 1_800_000_000),
        "cpu": rng.randint(0, 191),
        "train": rng.choice((6, 5, 3)),
        "roll": rng.choice((4, 3)),
        "passed": rng.randint(3, 40),
        "zone": rng.choice("abcd"),
    }


def failure_block(
    rng: Random, forms: tuple[str, ...], values: dict[str, Any]
) -> tuple[list[str], int]:
    """The lines of one failure message and the index of the line that shows the category."""
    form = rng.choice(forms)
    lines = form.format(**values).split("\n")
    signal = next(i for i, line in enumerate(lines) if line.startswith(">>"))
    lines[signal] = lines[signal][2:]
    return lines, signal


def exit_code(rng: Random, category: str, lines: list[str]) -> int:
    """The shell exit code GitHub reports after this failure."""
    if any(" Killed " in line for line in lines):
        return 137
    if any("No such file or directory" in line and "bash:" in line for line in lines):
        return 127
    return rng.choice(EXIT_CODES.get(category, (1,)))
