"""`gpus_per_worker = auto`: the packing rule's arithmetic over many clusters and measurements, and the
memory share a packed trial's process caps itself at. Pure functions: no Ray, no torch, no GPU."""

import math

import pytest

from tuner.execution import packing
from tuner.execution.packing import GIB, ClusterGpus, Measured, memory_fraction, plan, share_of, trials_per_gpu
from tuner.storage.meta import GpuRecord

H200 = 141 * GIB
ONE_GPU = ClusterGpus(gpus=1, cpus=16, gpus_per_node=1)
NO_GPU = ClusterGpus(gpus=0, cpus=2, gpus_per_node=0)


def _auto(cluster=ONE_GPU, measured=None, workers=1, parallel="ddp", cpus_per_worker=1.0, **kwargs):
    return plan(
        "auto",
        workers=workers,
        parallel=parallel,
        cpus_per_worker=cpus_per_worker,
        cluster=cluster,
        measured=measured,
        **kwargs,
    )


@pytest.mark.parametrize(
    "peak_gib, gpu_gib, cpus_per_gpu, cpus_per_worker, expected",
    [
        (0.33, 141, 16, 1, 8),  # a small CNN on an H200: the cap of 8
        (0.33, 141, 4, 1, 4),  # ... with 4 CPUs per GPU: the CPUs bind
        (0.33, 141, 16, 4, 4),  # ... trials of 4 CPUs each
        (0.33, 141, 16, 3, 5),  # 16 / 3 = 5.3: whole trials only
        (20, 141, 16, 1, 4),  # 126.9 / (20 * 1.5 + 0.5) = 4.16
        (60, 141, 16, 1, 1),  # 126.9 / 90.5: one
        (200, 141, 16, 1, 1),  # more than the GPU: still one (the trial fails alone, with its own OOM)
        (1.0, 16, 16, 1, 7),  # a 16 GiB GPU: 14.4 / 2.0 = 7.2
        (2.0, 16, 16, 1, 4),  # 14.4 / 3.5 = 4.1
        (0.1, 16, 1, 1, 1),  # one CPU per GPU: one trial
        (0.1, 16, 0.5, 1, 1),  # fewer CPUs than GPUs: never below one
    ],
)
def test_trials_per_gpu_is_the_least_of_memory_cpus_and_the_cap(
    peak_gib, gpu_gib, cpus_per_gpu, cpus_per_worker, expected
):
    by_memory = math.floor(
        gpu_gib * GIB * packing.USABLE_FRACTION / (peak_gib * GIB * packing.HEADROOM + packing.CUDA_CONTEXT_BYTES)
    )
    want = max(1, min(by_memory, math.floor(cpus_per_gpu / cpus_per_worker), packing.MAX_TRIALS_PER_GPU))
    count, _ = trials_per_gpu(int(peak_gib * GIB), int(gpu_gib * GIB), cpus_per_gpu, cpus_per_worker)
    assert count == want == expected


def test_what_bound_the_count_is_said():
    assert "CPUs per GPU" in trials_per_gpu(int(0.3 * GIB), H200, 4, 1)[1]
    assert trials_per_gpu(int(0.3 * GIB), H200, 4, 1)[1] == "the cluster's 4 CPUs per GPU feed 4 at 1 each"
    assert trials_per_gpu(int(20 * GIB), H200, 16, 1)[1] == "as many as its memory holds at 1.5x the peak"
    assert trials_per_gpu(int(0.3 * GIB), H200, 16, 1)[1] == "8 at most"


@pytest.mark.parametrize("count, share", [(1, 1.0), (2, 0.5), (3, 0.3333), (4, 0.25), (7, 0.1428), (8, 0.125)])
def test_the_share_lets_that_many_trials_fit_in_rays_steps(count, share):
    assert share_of(count) == pytest.approx(share)
    assert share_of(count) * count <= 1.0 + 1e-12
    assert round(share_of(count), 4) == pytest.approx(share_of(count))


def test_auto_measured_on_a_gpu_packs_by_the_measurement():
    measured = Measured(peak_bytes=int(0.33 * GIB), gpu_bytes=H200, step_s=0.05)
    decision = _auto(ClusterGpus(gpus=1, cpus=4, gpus_per_node=1), measured)
    assert (decision.trials_per_gpu, decision.gpus_per_worker) == (4, 0.25)
    assert decision.line.startswith("4 trials per GPU on 1 GPU (peak 0.33 GiB each, measured in the smoke step")
    assert "4 CPUs per GPU" in decision.line
    assert decision.record() == GpuRecord(
        setting="auto",
        gpus_per_worker=0.25,
        trials_per_gpu=4,
        why=decision.line,
        peak_gib=0.33,
        gpu_gib=141.0,
        step_s=0.05,
    )


def test_auto_without_a_gpu_in_the_cluster_trains_on_the_cpu():
    measured = Measured(peak_bytes=GIB, gpu_bytes=H200, step_s=0.1)  # the driver has one, the cluster none
    for given in (None, measured):
        decision = _auto(NO_GPU, given)
        assert (decision.gpus_per_worker, decision.trials_per_gpu) == (0.0, 0)
        assert decision.line == "no GPU in the cluster: trials train on the CPU"


def test_auto_with_nothing_measured_gives_each_trial_a_gpu_and_says_how_to_share():
    decision = _auto(ClusterGpus(gpus=2, cpus=32, gpus_per_node=2), None)
    assert (decision.gpus_per_worker, decision.trials_per_gpu) == (1.0, 1)
    assert decision.line == (
        "1 trial per GPU on 2 GPUs (the driver has no GPU to measure a trial on; "
        "to share each GPU between 4 trials: --gpus-per-worker 0.25)"
    )
    skipped = _auto(ONE_GPU, None, unmeasured="--no-smoke: nothing measured")
    assert "(--no-smoke: nothing measured;" in skipped.line


def test_auto_gives_each_worker_of_a_multi_worker_trial_a_whole_gpu():
    measured = Measured(peak_bytes=int(0.1 * GIB), gpu_bytes=H200, step_s=0.01)  # small: would pack 8
    for parallel in ("ddp", "fsdp", "pipeline"):
        decision = _auto(ClusterGpus(gpus=4, cpus=64, gpus_per_node=4), measured, workers=2, parallel=parallel)
        assert (decision.gpus_per_worker, decision.trials_per_gpu) == (1.0, 1)
        assert "NCCL" in decision.line


def test_auto_gives_a_dp_trial_the_gpus_of_a_node():
    decision = _auto(ClusterGpus(gpus=8, cpus=64, gpus_per_node=4), None, parallel="dp")
    assert decision.gpus_per_worker == 4.0


@pytest.mark.parametrize(
    "given, per_gpu, line",
    [
        (0.25, 4, "4 trials per GPU on 1 GPU (gpus_per_worker = 0.25, as set)"),
        (0.3, 3, "3 trials per GPU on 1 GPU (gpus_per_worker = 0.3, as set)"),
        (1, 1, "1 GPU per worker on 1 GPU (gpus_per_worker = 1, as set)"),
        (2, 1, "2 GPUs per worker on 1 GPU (gpus_per_worker = 2, as set)"),
        (0, 0, "trials train on the CPU (gpus_per_worker = 0)"),
    ],
)
def test_a_number_given_wins_over_any_measurement(given, per_gpu, line):
    measured = Measured(peak_bytes=int(0.1 * GIB), gpu_bytes=H200, step_s=0.01)
    for cluster in (ONE_GPU, NO_GPU):
        decision = plan(given, workers=1, parallel="ddp", cpus_per_worker=1, cluster=cluster, measured=measured)
        assert (decision.gpus_per_worker, decision.trials_per_gpu) == (given, per_gpu)
    assert plan(given, workers=1, parallel="ddp", cpus_per_worker=1, cluster=ONE_GPU, measured=None).line == line


@pytest.mark.parametrize(
    "share, gpu_gib, fraction",
    [
        (1.0, 141, None),  # a GPU to itself: no cap
        (2.0, 141, None),
        (0.0, 141, None),  # the CPU
        (0.25, 141, 0.25 - 0.5 / 141),  # its share less the CUDA context it also holds
        (0.125, 16, 0.125 - 0.5 / 16),
        (0.01, 16, 0.005),  # a share smaller than a context: half the share, never nothing
    ],
)
def test_a_packed_trial_caps_its_memory_at_its_share(share, gpu_gib, fraction):
    got = memory_fraction(share, gpu_gib * GIB)
    assert got == (None if fraction is None else pytest.approx(fraction))


def test_the_caps_of_a_full_gpu_leave_room_for_each_trials_context():
    for count in range(2, packing.MAX_TRIALS_PER_GPU + 1):
        fraction = memory_fraction(share_of(count), H200)
        assert fraction is not None
        assert count * (fraction * H200 + packing.CUDA_CONTEXT_BYTES) <= H200


@pytest.mark.parametrize(
    "have, need, fits",
    [
        (1.0, 0.2, 5),  # 1.0 // 0.2 == 4.0 in floats: five trials at 0.2 GPU would run four at a time
        (16.0, 0.1, 160),  # 16 // 0.1 == 159.0
        (1.0, 0.25, 4),
        (1.0, share_of(3), 3),  # 0.3333: Ray's step
        (1.0, 0.3, 3),
        (2.0, 0.7, 2),
        (1.0, 1.0, 1),
        (0.5, 1.0, 0),
    ],
)
def test_shares_fit_as_ray_counts_them(have, need, fits):
    assert packing.how_many_fit(have, need) == fits


def test_every_count_of_trials_per_gpu_agrees_on_the_rounding():
    """The plan, the live view's line and how many trials run at once: one rule, Ray's."""
    from tuner.execution.tune_run import gpu_sharing, trials_that_fit
    from tuner.settings import Resources

    fifth = Resources(gpus_per_worker=0.2, cpus_per_worker=0.1)
    assert plan(0.2, workers=1, parallel="ddp", cpus_per_worker=0.1, cluster=ONE_GPU, measured=None).trials_per_gpu == 5
    assert gpu_sharing(fifth) == "5 trials per GPU"
    assert trials_that_fit(fifth, {"CPU": 16.0, "GPU": 1.0}) == 5
    assert trials_that_fit(Resources(cpus_per_worker=0.1, gpus_per_worker=0), {"CPU": 16.0}) == 160
    assert trials_per_gpu(GIB // 100, H200, cpus_per_gpu=0.8, cpus_per_worker=0.1)[0] == 8
