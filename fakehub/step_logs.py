"""The normal output of each step of a job's log: set up, checkout, install, test and the rest.

What a step that succeeds prints, drawn from the job's seed, with verl's images, CANN versions,
packages and test scripts of the time (verl-recipe's DAPO script and dataset in our own words);
``fakehub.logs`` writes it with timestamps and appends a failure block to the step that failed.
A little under 400 lines: the word lists are data that only these step bodies read.
"""

from __future__ import annotations

from random import Random

from fakehub.catalog import dated
from fakehub.records import Job, Run
from fakehub.steps import Step

GPU_IMAGES = [
    ["2025-01-01", "app-verl0.5-transformers4.55.4-vllm0.10.0-mcore0.13.0-te2.2"],
    ["2025-11-06", "app-verl0.6-transformers4.57.1-vllm0.11.0.dev7-mcore0.13.0-te2.2"],
    ["2025-12-29", "app-verl0.6-transformers4.57.1-vllm0.12.0-mcore0.14.0-te2.7"],
    ["2026-03-12", "app-verl0.7-transformers4.57.6-vllm0.17.0.dev2-mcore0.15.0-te2.8"],
    ["2026-04-03", "app-verl0.7-transformers5.3.0-vllm0.18.0.dev1-mcore0.15.0-te2.8"],
    ["2026-05-22", "app-verl0.8-transformers5.4.0-vllm0.20.0.dev1-mcore0.16.0-te2.9"],
    ["2026-06-18", "app-verl0.8-transformers5.5.1-vllm0.23.0.dev1-mcore0.16.0-te2.10"],
    ["2026-07-28", "app-verl0.9-transformers5.5.1-vllm0.24.0.dev2-mcore0.16.1-te2.10"],
    ["2026-08-17", "uv.cu130"],
]
CANN = [["2025-01-01", "8.3.RC1"], ["2026-03-12", "8.5.0"], ["2026-06-01", "9.0.0"]]
PIP_PACKAGES = (
    ("accelerate", "1.10.1"),
    ("codetiming", "1.4.0"),
    ("datasets", "4.1.1"),
    ("dill", "0.3.8"),
    ("hydra-core", "1.3.2"),
    ("liger-kernel", "0.6.2"),
    ("numpy", "2.2.6"),
    ("pandas", "2.3.3"),
    ("peft", "0.17.1"),
    ("pyarrow", "21.0.0"),
    ("pybind11", "3.0.1"),
    ("pylatexenc", "2.10"),
    ("ray", "2.49.2"),
    ("tensordict", "0.10.0"),
    ("torchdata", "0.11.0"),
    ("wandb", "0.22.1"),
    ("pytest", "8.4.2"),
    ("py-spy", "0.4.1"),
    ("pre-commit", "4.3.0"),
    ("math-verify", "0.8.0"),
)
SCRIPTS = {
    "fully_async_policy": "tests/special_e2e/run_fully_async_policy.sh",
    "fully_async_policy_opd": "tests/special_e2e/run_fully_async_policy_opd.sh",
    "one_step_off_policy": "tests/special_e2e/run_one_step_off_policy.sh",
    "v1_separate_async": "tests/special_e2e/run_v1_separate_async.sh",
    "v1_separate_async_opd": "tests/special_e2e/run_v1_separate_async_opd.sh",
    "trtllm_async_unit_tests": "pytest -s -x tests/experimental/trtllm/",
    "ppo_trainer": "tests/special_npu/run_qwen2_5_05b_grpo.sh",
    "sft_trainer": "tests/special_npu/run_qwen2_5_05b_sft_peft_sp2.sh",
    "dapo": "tests/e2e/run_dapo_qwen2_5_0_5b.sh",  # verl-recipe
}
# What a repository's own install step builds: its package and version (verl's by default).
PACKAGES = {"verl-recipe": ("verl_recipe", "0.2.0.dev0")}
WARNINGS = (
    "\x1b[33mWARNING: Running pip as the 'root' user can result in broken permissions and "
    "conflicting behaviour with the system package manager.\x1b[0m",
    "(TaskRunner pid={pid}) /usr/local/lib/python3.12/dist-packages/torch/distributed/fsdp/"
    "_fully_shard/_fsdp_param.py:{ln}: UserWarning: FSDP2 mixed precision is experimental",
    "(WorkerDict pid={pid}) `torch_dtype` is deprecated! Use `dtype` instead!",
    "(WorkerDict pid={pid}) WARNING {hms} [__init__.py:{ln}] The following environment variables "
    "were set but not used: VLLM_ATTENTION_BACKEND",
    "(TaskRunner pid={pid}) FutureWarning: `ray.get_gpu_ids` will be deprecated in Ray 3.0",
)


def step_body(
    rng: Random, job: Job, run: Run, repo: str, step: Step, values: dict[str, object]
) -> list[str]:
    """The normal (successful) output of one step."""
    kind = step.kind
    if kind == "setup_job":
        return _set_up(rng, job)
    if kind == "checkout":
        return _checkout(rng, run, repo)
    if kind in ("create_runner", "destroy_runner"):
        verb = "create" if kind == "create_runner" else "destroy"
        return [
            "##[group]Run volcengine/vemlp-github-runner@v1",
            "with:",
            f"  mode: {verb}",
            "  faas-url: ***",
            "  image: verl-ci/" + str(dated(GPU_IMAGES, job.created_at)),
            "##[endgroup]",
            f"vemlp runner {verb} request accepted (task {values['hex8']})",
            *(f"waiting for runner ... {i * 10}s" for i in range(1, rng.randint(2, 7))),
            f"runner {verb}d: vemlp-l20x8-{values['hex8'][:5]}-runner (label L20x8)",
        ]
    if kind == "containers":
        cann = dated(CANN, job.created_at)
        image = f"swr.cn-south-1.myhuaweicloud.com/ascend-ci/verl/verl:cann{cann}"
        return [
            "##[group]Pull down action image '" + image + "'",
            f"##[command]/usr/bin/docker pull {image}",
            *(f"{values['hex8'][:4]}{i:08x}: Pull complete" for i in range(rng.randint(4, 12))),
            f"Status: Image is up to date for {image}",
            "##[endgroup]",
            "##[command]/usr/bin/docker create --name verl_npu --shm-size 16g "
            "--device /dev/davinci_manager --device /dev/hisi_hdc " + image,
        ]
    if kind == "npu_info":
        cann = dated(CANN, job.created_at)
        return [
            '##[group]Run cat /usr/local/Ascend/ascend-toolkit/latest/"$(uname -i)"-linux/'
            "ascend_toolkit_install.info",
            "##[endgroup]",
            "package_name=Ascend-cann-toolkit",
            f"version={cann}",
            f"innerversion=V100R001C{rng.randint(20, 30)}SPC001B",
            "arch=aarch64",
            "os=linux",
            "+ npu-smi info",
            "+------------------------------------------------------------------------------+",
            f"| npu-smi 25.{rng.randint(0, 2)}.rc1          Version: 25.{rng.randint(0, 2)}.rc1"
            "     "
            "                        |",
            *(
                f"| {i}     Ascend910   | OK            | "
                f"{rng.randint(90, 110)}.{rng.randint(0, 9)}        {rng.randint(35, 55)}"
                "   0    / 0"
                " |"
                for i in range(8)
            ),
        ]
    if kind == "install":
        return _install(rng, job, repo)
    if kind == "pip_list":
        return [
            "##[group]Run pip3 list",
            "pip3 list",
            "##[endgroup]",
            "Package    Version",
            "---------- ---------",
            *(f"{n:<34} {v}" for n, v in PIP_PACKAGES),
        ]
    if kind == "weights":
        return ["##[group]Run ln -s /root/.cache/models ~/models", "##[endgroup]"]
    if kind == "dataset" and job.spec.algo == "dapo":
        return _dapo_dataset(rng)
    if kind == "dataset":
        return [
            "##[group]Run python3 examples/data_preprocess/gsm8k.py --local_dataset_path "
            "${HOME}/models/hf_data/gsm8k",
            "##[endgroup]",
            "Map: 100%|██████████| 7473/7473 [00:00<00:00, "
            f"{rng.randint(20000, 40000)}.{rng.randint(10, 99)} examples/s]",
            "Map: 100%|██████████| 1319/1319 [00:00<00:00, "
            f"{rng.randint(20000, 40000)}.{rng.randint(10, 99)} examples/s]",
            "Creating parquet from Arrow format: 100%|██████████| 8/8 [00:00<00:00, 95.1ba/s]",
        ]
    if kind == "test":
        return _test(rng, job, values)
    if kind == "post":
        return [
            "Post job cleanup.",
            "##[command]/usr/bin/git version",
            "git version 2.43.0",
            "##[command]/usr/bin/git config --local --name-only --get-regexp core\\.sshCommand",
            '##[command]/usr/bin/git submodule foreach --recursive "sh -c \\"git config '
            "--local --name-only --get-regexp 'core\\.sshCommand' && git config --local "
            "--unset-all 'core.sshCommand' || :\\\"\"",
        ]
    if kind == "stop_containers":
        return [
            "Stop and remove container: verl_npu",
            "##[command]/usr/bin/docker rm --force verl_npu",
        ]
    return ["Cleaning up orphan processes"]


def _set_up(rng: Random, job: Job) -> list[str]:
    hosted = job.runner_label.startswith("ubuntu")
    lines = [
        f"Current runner version: '2.3{rng.randint(27, 30)}.{rng.randint(0, 3)}'",
        f"Runner name: '{job.runner_name}'",
        f"Runner group name: '{'GitHub Actions' if hosted else 'Default'}'",
        f"Machine name: '{'runnervm' + format(job.seed, 'x')[:5] if hosted else job.runner_name}'",
    ]
    if hosted:
        lines += [
            "##[group]Operating System",
            "Ubuntu",
            "24.04.3",
            "LTS",
            "##[endgroup]",
            "##[group]Runner Image",
            "Image: ubuntu-24.04",
            f"Version: 2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}."
            f"{rng.randint(1, 200)}.1",
            "##[endgroup]",
        ]
    return lines + [
        "##[group]GITHUB_TOKEN Permissions",
        "Contents: read",
        "Metadata: read",
        "##[endgroup]",
        "Secret source: Actions",
        "Prepare workflow directory",
        "Prepare all required actions",
        "Getting action download info",
        "Download action repository 'actions/checkout@v4' "
        f"(SHA:{format(job.seed * 2654435761 % (1 << 160), '040x')})",
        f"Complete job name: {job.spec.name}",
    ]


def _checkout(rng: Random, run: Run, repo: str) -> list[str]:
    name = repo.rsplit("/", 1)[-1]
    work = f"/home/runner/work/{name}/{name}"
    return [
        "##[group]Run actions/checkout@v4",
        "with:",
        f"  repository: {repo}",
        "  token: ***",
        "  fetch-depth: 1",
        "##[endgroup]",
        f"Syncing repository: {repo}",
        "##[group]Getting Git version info",
        f"Working directory is '{work}'",
        "##[command]/usr/bin/git version",
        "git version 2.43.0",
        "##[endgroup]",
        f"##[command]/usr/bin/git init {work}",
        "##[command]/usr/bin/git -c protocol.version=2 fetch --no-tags --prune "
        f"--no-recurse-submodules --depth=1 origin +{run.sha}:refs/remotes/origin/{run.branch}",
        f"remote: Enumerating objects: {rng.randint(2000, 4000)}, done.",
        f"remote: Total {rng.randint(2000, 4000)} (delta {rng.randint(200, 600)}), reused 0",
        f" * [new ref]         {run.sha} -> origin/{run.branch}",
        f"HEAD is now at {run.sha[:7]} {run.title}",
    ]


def _install(rng: Random, job: Job, repo: str) -> list[str]:
    npu = job.spec.kind == "npu_test"
    pip = "uv pip" if npu and job.created_at.isoformat() >= "2026-06-02" else "pip3"
    lines = [
        f"##[group]Run {pip} install -r requirements-test.txt",
        f"{pip} install -r requirements-test.txt",
        f"{pip} install --no-deps -e .",
        "shell: /usr/bin/bash -e {0}",
        "env:",
        "  HTTPS_PROXY: ***",
        "  HF_ENDPOINT: https://hf-mirror.com",
        "##[endgroup]",
    ]
    chosen = rng.sample(PIP_PACKAGES, rng.randint(6, len(PIP_PACKAGES)))
    for name, version in chosen:
        if rng.random() < 0.5:
            lines.append(
                f"Requirement already satisfied: {name} in /usr/local/lib/python3.12/"
                f"dist-packages (from -r requirements-test.txt (line {rng.randint(1, 30)})) "
                f"({version})"
            )
        else:
            lines += [
                f"Collecting {name}=={version} (from -r requirements-test.txt (line "
                f"{rng.randint(1, 30)}))",
                f"  Downloading {name.replace('-', '_')}-{version}-"
                f"py3-none-any.whl.metadata ({rng.randint(2, 40)}.{rng.randint(0, 9)} kB)",
            ]
    checkout = repo.rsplit("/", 1)[-1]
    package, release = PACKAGES.get(checkout, ("verl", "0.8.0.dev0"))
    lines += [
        "Installing collected packages: " + ", ".join(n for n, _ in chosen[:5]),
        "Successfully installed " + " ".join(f"{n}-{v}" for n, v in chosen[:5]),
        WARNINGS[0],
        f"Obtaining file:///home/runner/work/{checkout}/{checkout}",
        f"Building wheels for collected packages: {package}",
        f"Successfully built {package}",
        f"Successfully installed {package}-{release}",
    ]
    return lines


def _dapo_dataset(rng: Random) -> list[str]:
    """verl-recipe's dataset step: the DAPO math prompts and an AIME validation set."""
    return [
        "##[group]Run bash tests/e2e/prepare_dapo_data.sh",
        "bash tests/e2e/prepare_dapo_data.sh",
        "##[endgroup]",
        f"fetching dapo-math-17k.parquet from the CI cache ({rng.randint(280, 320)} MB)",
        f"fetching aime-2024.parquet from the CI cache ({rng.randint(1, 3)} MB)",
        "train prompts: 17917, validation prompts: 30, kept after dedup: "
        f"{rng.randint(17390, 17420)}",
    ]


def _test(rng: Random, job: Job, values: dict[str, object]) -> list[str]:
    spec = job.spec
    script = SCRIPTS.get(spec.algo, "tests/special_e2e/run_ppo_trainer.sh")
    lines = [
        "##[group]Run ray stop --force",
        "ray stop --force",
        f"ACTOR_STRATEGY={spec.strategy} bash {script}",
        "shell: /usr/bin/bash -e {0}",
        "env:",
        f"  ACTOR_STRATEGY: {spec.strategy}",
        "  HF_ENDPOINT: https://hf-mirror.com",
        "##[endgroup]",
        "Did not find any active Ray processes.",
    ]
    strategy = {"fsdp2": "FSDP2", "megatron": "Megatron"}.get(spec.strategy, spec.strategy)
    lines += {
        "fully_async_policy": [
            f"+ echo 'Running fully_async_policy with {spec.strategy} strategy'",
            f"Running fully_async_policy with {spec.strategy} strategy",
            "Total GPUs: 8, Rollout GPUs: 4, Training GPUs: 4",
            f"Running fully async training with {strategy} strategy...",
        ],
        "one_step_off_policy": [
            f"Running one_step_off_policy with {spec.strategy} strategy",
            "Total GPUs: 8, Rollout GPUs: 2, Training GPUs: 6",
            f"Running with {strategy} strategy...",
        ],
        "v1_separate_async": [
            f"Running V1 separate_async with {spec.strategy}: 4 training + 4 rollout GPUs"
        ],
        "v1_separate_async_opd": [
            "Running V1 separate_async Multi-Teacher OPD",
            "Student: Qwen3-VL-2B-Instruct",
            "Teachers: Qwen3-4B-Instruct-2507, Qwen3-VL-4B-Instruct",
            "GPUs: 4 training + 2 rollout + 2 teachers",
        ],
        "fully_async_policy_opd": [
            "Running fully_async_policy + Multi-Teacher OPD",
            "GPUs: 2 rollout + 4 training + 2 teachers",
        ],
        "dapo": [
            f"+ echo 'DAPO recipe e2e, {spec.strategy} backend'",
            f"DAPO recipe e2e, {spec.strategy} backend",
            "model: Qwen2.5-0.5B-Instruct, prompts per step: 32, samples per prompt: 8",
            "dynamic sampling on: groups whose rewards all agree are dropped and regenerated",
        ],
    }.get(spec.algo, [f"+ {script}"])
    pid = values["pid"]
    lines += [
        f"{values['date']} {values['hms']},{values['ms3']} INFO "
        f"worker.py:{rng.randint(1500, 2100)} -- Started a "
        "local Ray instance. View the dashboard at \x1b[1m\x1b[32m127.0.0.1:8265 \x1b[39m\x1b[22m",
        f"\x1b[36m(TaskRunner pid={pid})\x1b[0m TaskRunner hostname: {job.runner_name}, PID: {pid}",
        f"\x1b[36m(TaskRunner pid={pid})\x1b[0m Using dataset class: RLHFDataset",
    ]
    steps = rng.randint(2, 4)
    for step in range(1, steps + 1):
        if rng.random() < 0.5:
            lines.append(rng.choice(WARNINGS[1:]).format(**values))
        lines.append(
            f"\x1b[36m(TaskRunner pid={pid})\x1b[0m step:{step} - global_seqlen/mean:"
            f"{rng.randint(20000, 60000)}.{rng.randint(0, 9)}"
            f" - actor/entropy:{rng.uniform(0.3, 1.2):.4f}"
            f" - actor/pg_loss:{rng.uniform(-0.05, 0.05):.5f}"
            f" - actor/grad_norm:{rng.uniform(0.1, 3):.4f}"
            f" - critic/score/mean:{rng.uniform(0, 0.6):.4f}"
            f" - timing_s/gen:{rng.uniform(5, 60):.2f}"
            f" - perf/max_memory_allocated_gb:{rng.uniform(10, 38):.2f}"
        )
        lines.append(
            f"Training Progress: {100 * step // steps:3d}%|{'█' * (10 * step // steps):<10}|"
            f" {step}/{steps} [{rng.randint(0, 5):02d}:{rng.randint(10, 59):02d}<00:00, "
            f"{rng.uniform(20, 90):.2f}s/it]"
        )
    lines.append(
        {
            "fully_async_policy": f"Fully async policy E2E test completed successfully with "
            f"{spec.strategy} strategy",
            "one_step_off_policy": f"One-step-off-policy E2E test completed successfully with "
            f"{spec.strategy} strategy",
            "v1_separate_async": "V1 separate_async E2E completed successfully with "
            + spec.strategy,
            "v1_separate_async_opd": "V1 separate_async Multi-Teacher OPD E2E completed "
            "successfully",
            "fully_async_policy_opd": "Fully async policy + Multi-Teacher OPD E2E test completed "
            "successfully",
            "dapo": f"DAPO recipe e2e passed ({spec.strategy}): {steps} steps trained",
        }.get(
            spec.algo,
            f"============ {rng.randint(4, 30)} passed in {rng.uniform(30, 300):.2f}s ============",
        )
    )
    return lines
