# A Beam worker image for medsimp's jobs on Dataflow, Flink or Spark (docs/refresh.md,
# "Worker setup"). Build it from the repository root, after building the wheel:
#
#   pip wheel --no-deps -w dist .
#   docker build -f docker/worker.Dockerfile -t REGISTRY/medsimp-worker:0.1.0 .
#
# then run the jobs with --sdk_container_image=REGISTRY/medsimp-worker:0.1.0 (Dataflow) or
# --environment_type=DOCKER --environment_config=REGISTRY/medsimp-worker:0.1.0 (Flink, Spark).
#
# The recipe is the one tests/test_runners.py's cluster runs with, in an image: the exact set of
# constraints.txt, then the medsimp wheel. The image itself is not built by the tests: the
# machines they run on reach no container registry. Keep the tag below equal to the
# apache-beam version in constraints.txt (tests/test_lock.py checks it): the SDK in the image
# must be the launcher's.
FROM apache/beam_python3.11_sdk:2.77.0

# torch's CPU build (the one medsimp is verified with); PyPI's default build is CUDA, several GB.
# The CPU-independent kernels (medsimp.numerics.PINNED_ENV): a worker imports numpy with Beam,
# before medsimp can set them, and medsimp refuses to align on kernels chosen by the CPU.
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    HF_HUB_OFFLINE=1 \
    MEDSIMP_CACHE=/opt/medsimp/cache \
    ATEN_CPU_CAPABILITY=default \
    MKL_CBWR=COMPATIBLE \
    OPENBLAS_CORETYPE=Haswell \
    NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"

COPY constraints.txt /opt/medsimp/constraints.txt
COPY dist/medsimp-0.1.0-py3-none-any.whl /opt/medsimp/
RUN pip install --no-cache-dir -c /opt/medsimp/constraints.txt /opt/medsimp/medsimp-0.1.0-py3-none-any.whl \
 && python -c "import medsimp.resources as r; r.ensure_nltk_data()"

# Models and indexes the jobs load in DoFn.setup() from local paths: copy them in and name these
# paths in params.yaml (align.model, umls.index, ...). The QuickUMLS index and LASER are
# licensed: build the image only where their licences allow, and keep it in a private registry.
# COPY out/models/crf_aligner /opt/medsimp/models/crf_aligner
# COPY umls-index /opt/medsimp/umls-index
