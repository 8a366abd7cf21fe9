"""Beam plumbing shared by every job: runner options, deterministic sharded writes, counters.

Outputs are byte-identical across runs and runners: rows are routed to a fixed
number of shards by a stable hash of a key, sorted inside each shard, and
written by one DoFn call per shard through Beam's FileSystems (so gs://, s3://,
hdfs:// work on distributed runners).
"""

from __future__ import annotations

import errno
import heapq
import io
import itertools
import json
import logging
import math
import os
import pickle
import re
import signal
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import apache_beam as beam
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from medsimp.errors import MedsimpError, UsageError
from medsimp.params_schema import Beam
from medsimp.stats import record_run
from pipelines.sources.tables import read_documents, read_rows

LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner")


def local_mode(beam_params: Beam | None) -> tuple[str, int, str]:
    """(runner, worker count, running mode) that the `beam` params section asks for; the
    mode is "" for a runner other than the local one."""
    beam_params = beam_params or Beam()  # none: the schema's defaults
    runner = beam_params.runner
    if runner not in LOCAL_RUNNERS:
        return runner, 0, ""
    workers = beam_params.num_workers
    mode = beam_params.running_mode or ("multi_processing" if workers > 1 else "in_memory")
    return runner, workers, mode


def pipeline_options(beam_params: Beam | None = None, extra_args: Iterable[str] = ()) -> PipelineOptions:
    """Options from the `beam` params section plus raw `--beam-arg` flags.

    Locally: FnApiRunner (the DirectRunner's engine, no Prism download) on `num_workers`
    worker processes (`running_mode: multi_processing`, the default for more than one worker),
    or Beam's `in_memory` / `multi_threading` modes. Pass e.g.
    `--beam-arg=--runner=FlinkRunner --beam-arg=--flink_master=host:8081`
    to run the same job elsewhere.
    """
    beam_params = beam_params or Beam()
    runner, workers, mode = local_mode(beam_params)
    args = [f"--runner={runner}"]
    if mode:
        args += [f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
    args.append(f"--default_sdk_harness_log_level={beam_params.log_level}")
    args += [str(a) for a in beam_params.options]
    args += list(extra_args)
    return PipelineOptions(args)


# --- Object stores --------------------------------------------------------------------------
# Beam's S3 filesystem writes every file as a multipart upload (an empty file becomes an upload
# with zero parts, which S3 refuses with MalformedXML, and a failed upload is never aborted) and
# retries an unreachable endpoint for minutes. medsimp therefore writes s3:// files itself
# (`create_file`), with a client built from the same settings (Beam's S3Options, else the
# standard AWS environment) but bounded in time, and checks a store before the work
# (`check_store`). Bounds on failure, not knobs of the data:
STORE_CONNECT_SECONDS = 5  # to open a connection to the store
STORE_READ_SECONDS = 10  # for the store to answer one request (socket reads and sends)
STORE_ATTEMPTS = 3  # tries per request (botocore's standard retry mode: at most ~20 s of backoff)
PART_BYTES = 8 << 20  # bytes per part of a multipart upload; a smaller file is one PUT


def split_s3(path: str) -> tuple[str, str]:
    """s3://bucket/key -> (bucket, key)."""
    bucket, _, key = path[len("s3://") :].partition("/")
    return bucket, key


def _s3_settings() -> tuple:
    """The S3 settings Beam's S3FileSystem is given (the options the launcher or worker set on
    FileSystems, else the runtime options) and the AWS environment, as a hashable tuple."""
    from apache_beam.options.pipeline_options import S3Options
    from apache_beam.options.value_provider import RuntimeValueProvider

    options = FileSystems._pipeline_options  # what Beam's own get_filesystem hands S3FileSystem
    if options is None:
        options = PipelineOptions.from_dictionary(dict(RuntimeValueProvider.runtime_options or {}))
    s3 = options.view_as(S3Options)
    environment = (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
    )
    return (
        tuple(os.environ.get(name) for name in environment),  # what boto3 falls back on
        s3.s3_region_name,
        s3.s3_api_version,
        not s3.s3_disable_ssl,
        s3.s3_verify,
        s3.s3_endpoint_url,
        s3.s3_access_key_id,
        s3.s3_secret_access_key,
        s3.s3_session_token,
    )


_CLIENTS: dict[tuple, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def store_client() -> Any:
    """A boto3 S3 client with Beam's S3 settings (`_s3_settings`; what they leave out comes from
    the standard AWS environment, e.g. AWS_ENDPOINT_URL) and bounded connect/read timeouts and
    retries; one per process and settings (boto3 clients are thread-safe)."""
    settings = _s3_settings()
    with _CLIENTS_LOCK:
        if settings not in _CLIENTS:
            import boto3
            from botocore.config import Config

            _, region, api_version, use_ssl, verify, endpoint, key_id, secret, token = settings
            _CLIENTS[settings] = boto3.session.Session().client(
                "s3",
                region_name=region,
                api_version=api_version,
                use_ssl=use_ssl,
                verify=verify,
                endpoint_url=endpoint,
                aws_access_key_id=key_id,
                aws_secret_access_key=secret,
                aws_session_token=token,
                config=Config(
                    connect_timeout=STORE_CONNECT_SECONDS,
                    read_timeout=STORE_READ_SECONDS,
                    retries={"max_attempts": STORE_ATTEMPTS, "mode": "standard"},
                ),
            )
        return _CLIENTS[settings]


class _S3Upload:
    """A write-only file on S3: parts of PART_BYTES go up as a multipart upload; a file that
    stays under PART_BYTES (an empty one too) is one PUT when closed. `close` publishes the
    object (whole, or not at all); `abort` (any error, here or in the writer's code) aborts the
    multipart upload, so no abandoned upload is left and no partial object appears."""

    def __init__(self, path: str):
        self.path = path
        self.bucket, self.key = split_s3(path)
        self.client = store_client()
        self.buffer = bytearray()
        self.parts: list[dict] = []
        self.upload_id: str | None = None
        self.written = 0
        self.closed = False

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        pass

    def write(self, data) -> int:
        if self.closed:
            raise ValueError(f"write to a closed file ({self.path})")
        data = memoryview(data).cast("B")
        self.buffer += data
        self.written += len(data)
        while len(self.buffer) >= PART_BYTES:
            self._upload_part(bytes(self.buffer[:PART_BYTES]))
            del self.buffer[:PART_BYTES]
        return len(data)

    def _upload_part(self, data: bytes) -> None:
        if self.upload_id is None:
            self.upload_id = self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key)["UploadId"]
        number = len(self.parts) + 1
        answer = self.client.upload_part(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=number, Body=data
        )
        self.parts.append({"ETag": answer["ETag"], "PartNumber": number})

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.upload_id is None:
                self.client.put_object(Bucket=self.bucket, Key=self.key, Body=bytes(self.buffer))
            else:
                if self.buffer:
                    self._upload_part(bytes(self.buffer))
                self.client.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=self.key,
                    UploadId=self.upload_id,
                    MultipartUpload={"Parts": self.parts},
                )
                self.upload_id = None
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self.buffer = bytearray()

    def abort(self) -> None:
        """Drop what was written: abort the multipart upload, if one was started (best effort:
        the error that led here is what the caller reports)."""
        self.closed = True
        self.buffer = bytearray()
        if self.upload_id is not None:
            upload, self.upload_id = self.upload_id, None
            with suppress(Exception):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=upload)


@contextmanager
def create_file(path: str) -> Iterator[Any]:
    """A file to write at `path`, published when the block ends: `FileSystems.create`, except on
    s3:// (`_S3Upload`: an empty file is an empty object, and a block that raises leaves no
    object and no abandoned upload)."""
    if FileSystems.get_scheme(path) != "s3":
        with FileSystems.create(path) as fh:
            yield fh
        return
    upload = _S3Upload(path)
    try:
        yield upload
    except BaseException:
        upload.abort()
        raise
    upload.close()


def abort_uploads(prefix: str, keep: str | None = None) -> int:
    """Abort the unfinished multipart uploads under an s3:// `prefix` but not under `keep` (a
    writer killed mid-file leaves one, which the bucket bills until aborted); the number aborted.
    Other schemes have none: 0."""
    if FileSystems.get_scheme(prefix) != "s3":
        return 0
    bucket, key = split_s3(prefix)
    skip = split_s3(keep)[1] if keep else None
    client = store_client()
    aborted = 0
    for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=key):
        for upload in page.get("Uploads", []):
            if skip is None or not upload["Key"].startswith(skip):
                client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                aborted += 1
    return aborted


def write_file(path: str, data: bytes) -> None:
    """`data` as the whole file at `path` (`create_file`)."""
    with create_file(path) as fh:
        fh.write(data)


def _store_error(flag: str, path: str, exc: BaseException) -> UsageError:
    """One line for a store request that failed: no such bucket, access refused, no answer."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError, NoCredentialsError

    bucket = split_s3(path)[0]
    where = f"{flag} {path}".strip()
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("NoSuchBucket", "404") or status == 404:
            return UsageError(f"{where}: the bucket {bucket!r} does not exist (create it, or fix the URL)")
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch") or status == 403:
            return UsageError(
                f"{where}: the store refused access to the bucket {bucket!r} ({code or status})"
            )
        return UsageError(f"{where}: the store answered {code or status} for the bucket {bucket!r}")
    if isinstance(exc, NoCredentialsError):
        return UsageError(
            f"{where}: no credentials for the store (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )
    if isinstance(exc, ConnectionError | HTTPClientError):  # refused, timed out, reset: STORE_ATTEMPTS tries
        return UsageError(
            f"{where}: the store did not answer ({type(exc).__name__}, {STORE_ATTEMPTS} tries; check its "
            "endpoint and credentials, e.g. AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID)"
        )
    return UsageError(f"{where}: {type(exc).__name__} from the store")


def check_store(path: str, flag: str = "") -> None:
    """Before the work: the bucket of an s3:// `path` exists and answers, in bounded time
    (`store_client`), or one line naming the bucket (`_store_error`). Other paths pass."""
    if FileSystems.get_scheme(path) != "s3":
        return
    bucket = split_s3(path)[0]
    if not bucket:
        raise UsageError(f"{flag} {path}: no bucket in the URL".strip())
    try:
        store_client().head_bucket(Bucket=bucket)
    except Exception as exc:
        raise _store_error(flag, path, exc) from None


def use_store(beam_params: Beam | None, beam_args: Iterable[str], inputs: dict[str, Any]) -> None:
    """The launcher reaches object stores with the job's own options (credentials, endpoints:
    Beam's S3FileSystem needs them on FileSystems), and every object-store input is checked
    (`check_store`) before the work: `inputs` maps a flag to the path it names."""
    FileSystems.set_options(pipeline_options(beam_params, beam_args))
    for flag, path in inputs.items():
        if isinstance(path, str):
            check_store(path, flag)


class _LivePipeline(beam.Pipeline):
    """A Pipeline that shows a live spinner with the elapsed time while it runs (TTY only)."""

    def run(self, test_runner_api="AUTO"):
        from medsimp.progress import live

        beam_log = logging.getLogger("apache_beam")
        level = beam_log.level
        quiet = beam_log.getEffectiveLevel() >= logging.ERROR  # not -v: a failure is raised, in one line
        if quiet:
            beam_log.setLevel(logging.CRITICAL)
            # the PortableRunner logs its job service's messages (worker tracebacks) on the root logger
            logging.getLogger().addFilter(_not_beam)
        try:
            # read before the run: the PortableRunner clears the options' runner
            endpoints = _endpoints(self._options)
            check_endpoints(endpoints)  # before the job: one line if a service is not there
            with live(f"Beam job on {self._options.view_as(StandardOptions).runner}"), watch_workers():
                result = super().run(test_runner_api)
                wait_watching_pool(result, endpoints, type(self.runner).__name__)
        except MedsimpError:  # medsimp's own one-line errors (endpoints, workers) stay as they are
            raise
        except Exception as exc:
            error = write_error(exc) or service_error(exc) or runner_error(type(self.runner).__name__, exc)
            if error is None:
                raise
            raise error from None
        finally:
            beam_log.setLevel(level)
            logging.getLogger().removeFilter(_not_beam)
        return result


def _not_beam(record: logging.LogRecord) -> bool:
    """Drop what Beam's modules log on the root logger (the PortableRunner relays its job
    service's messages there: worker tracebacks, which may quote data)."""
    return f"{os.sep}apache_beam{os.sep}" not in record.pathname


def runner_error(runner: str, exc: BaseException) -> Exception | None:
    """A `StageFailed` in one line for a job a remote runner reports as failed (it raises a
    RuntimeError carrying the job's last error, e.g. "Channel closed prematurely." when the
    worker pool went away), without its text, which may quote data; None for local runners."""
    from medsimp.errors import StageFailed

    if runner in (
        "FnApiRunner",
        "DirectRunner",
        "BundleBasedDirectRunner",
        "SwitchingDirectRunner",
        "PrismRunner",
    ) or not isinstance(exc, RuntimeError):
        return None
    return StageFailed(
        f"the Beam job failed on the {runner}: a worker, the worker pool or a step failed; nothing is "
        "published (rerun with -v for the runner's messages)"
    )


# How long a portable job's job service and external worker pool may take to accept a
# connection before the job is refused in one line (Beam itself waits minutes, then raises a
# gRPC timeout): a bound on failure, not a knob of the data.
ENDPOINT_SECONDS = 30


def _endpoints(options: PipelineOptions) -> list[tuple[str, str]]:
    """(what, host:port) of the services a PortableRunner job connects to: the job endpoint
    (unless Beam embeds it) and an EXTERNAL worker pool, found where Beam's ExternalEnvironment
    looks: `--environment_config` as an address or as JSON `{"url": ...}`, else
    `--environment_options=external_service_address=...`.

    Only the PortableRunner's services are probed. A Flink or Spark runner's worker pool address
    is what its task managers dial (often a sidecar at localhost:50000 on each of them), which the
    launcher cannot reach, so probing it from here would refuse good jobs."""
    from apache_beam.options.pipeline_options import PortableOptions
    from apache_beam.transforms.environments import looks_like_json

    portable = options.view_as(PortableOptions)
    if options.view_as(StandardOptions).runner not in ("PortableRunner", "portable"):
        return []
    found = []
    if portable.job_endpoint and portable.job_endpoint != "embed":
        found.append(("job endpoint", portable.job_endpoint))
    if (portable.environment_type or "").upper() == "EXTERNAL":
        config = portable.environment_config or ""
        if looks_like_json(config):
            try:
                address = json.loads(config).get("url")
            except (ValueError, AttributeError):
                address = None  # Beam itself refuses it when the job starts
        else:
            address = config or portable.lookup_environment_option("external_service_address")
        if isinstance(address, str) and address:
            found.append(("external worker pool", address))
    return found


def check_endpoints(endpoints: list[tuple[str, str]]) -> None:
    """One line (exit 2) when a portable job's job endpoint or external worker pool does not
    accept a connection within ENDPOINT_SECONDS, before the job is submitted."""
    from medsimp.errors import UsageError

    for what, address in endpoints:
        if not _answers(address):
            raise UsageError(
                f"the {what} {address} did not answer within {ENDPOINT_SECONDS} s: start it, or fix "
                "--job_endpoint / --environment_config"
            )


# How often a running portable job checks that its external worker pool still accepts
# connections, and how long the launcher waits for the job to end once it has asked the job
# service to cancel it (Beam's cancel may fail, or leave the job waiting).
POOL_POLL_SECONDS = 2.0
POOL_GRACE_SECONDS = 10.0


def wait_watching_pool(result: Any, endpoints: list[tuple[str, str]], runner: str) -> None:
    """`result.wait_until_finish()`, bounded for a portable job on an EXTERNAL worker pool.

    Without a bound, a pool that dies after the job was submitted but before its worker reached
    the job server leaves the job waiting forever. So a thread checks every POOL_POLL_SECONDS that
    the pool accepts a connection; when it has not for ENDPOINT_SECONDS, medsimp asks the job
    service to cancel the job and stops waiting after POOL_GRACE_SECONDS more, with one line
    (`StageFailed`). A job that finishes successfully is a success even if its pool went away."""
    pools = [address for what, address in endpoints if what == "external worker pool"]
    if not pools:
        result.wait_until_finish()
        return
    gone: list[str] = []
    errors: list[BaseException] = []
    finished = threading.Event()

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread below
            errors.append(exc)
        finally:
            finished.set()

    def watch() -> None:
        while not finished.wait(POOL_POLL_SECONDS):
            for address in pools:
                if not _answers(address) and not finished.is_set():
                    gone.append(address)
                    threading.Thread(
                        target=_cancel, args=(result,), name="medsimp-cancel", daemon=True
                    ).start()
                    return

    for target, name in ((wait, "medsimp-wait"), (watch, "medsimp-watch-pool")):
        threading.Thread(target=target, name=name, daemon=True).start()
    gone_at = None
    while not finished.wait(1.0):
        if gone and gone_at is None:
            gone_at = time.monotonic()
        if gone_at is not None and time.monotonic() - gone_at > POOL_GRACE_SECONDS:
            break  # the cancel did not end the job: stop waiting for it
    if finished.is_set() and not errors:
        return
    if gone:
        raise _pool_gone(runner, gone[0])
    raise errors[0]


def _answers(address: str) -> bool:
    """Whether a gRPC server at `address` accepts a connection within ENDPOINT_SECONDS."""
    import grpc

    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=ENDPOINT_SECONDS)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def _cancel(result: Any) -> None:
    try:
        result.cancel()
    except Exception:  # noqa: BLE001 - the job service may be gone too; the launcher stops anyway
        pass


def _pool_gone(runner: str, address: str) -> Exception:
    from medsimp.errors import StageFailed

    return StageFailed(
        f"the Beam job failed on the {runner}: the external worker pool {address} stopped answering "
        f"(no connection for {ENDPOINT_SECONDS} s); medsimp asked the job service to cancel the job "
        "and published nothing"
    )


def service_error(exc: BaseException) -> Exception | None:
    """A `StageFailed` in one line for a portable job whose job service or workers stopped
    answering (a gRPC error or timeout), None for any other failure."""
    import grpc

    from medsimp.errors import StageFailed

    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, grpc.RpcError | grpc.FutureTimeoutError):
            code = chain.code().name if isinstance(chain, grpc.Call) else "timeout"
            return StageFailed(
                f"the Beam job service or its workers stopped answering ({code}); nothing is published "
                "(check the job server's and the worker pool's logs)"
            )
        chain = chain.__cause__ or chain.__context__
    return None


# Faults of the place a job writes to, which the user fixes (exit 2), not bugs of the job.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_WORKER_OSERROR = re.compile(
    r"\b(?:OSError|IOError): \[Errno (\d+)\][^\[\n]*(?:\[while running '([^'\n]+)'\])?"
)


def write_error(exc: BaseException) -> Exception | None:
    """A `UsageError` for a job that failed because its output's filesystem refused a write
    (full disk, quota, file size limit, read-only), which a worker reports as text in a
    RuntimeError; None for any other failure."""
    from medsimp.errors import UsageError

    code, step = None, ""
    chain: BaseException | None = exc
    while chain is not None and code is None:
        if isinstance(chain, OSError) and chain.errno in _WRITE_ERRNOS:
            code = chain.errno
        chain = chain.__cause__ or chain.__context__
    if code is None:
        for match in _WORKER_OSERROR.finditer(str(exc)):
            if int(match.group(1)) in _WRITE_ERRNOS:
                code, step = int(match.group(1)), match.group(2) or ""
                break
    if code is None:
        return None
    where = f" (in step {step})" if step else ""
    return UsageError(
        f"the job could not write its output: {os.strerror(code)} [{errno.errorcode[code]}]{where}; "
        "free space or pick another --output"
    )


# How a local worker process's command line names its main module (ours, or Beam's own).
_WORKER_MAINS = ("pipelines.jobs.worker", "apache_beam.runners.worker.sdk_worker_main")


def _worker_processes() -> list:
    """The local runner's SDK worker processes below this one (the `sh -c` and its Python)."""
    import psutil

    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if any(main in part for part in proc.cmdline() for main in _WORKER_MAINS):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def stop_workers(timeout: float = 10.0) -> None:
    """Kill the local runner's worker processes and wait for Beam's threads that watch them."""
    import psutil

    procs = _worker_processes()
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=timeout)
    for thread in threading.enumerate():
        if thread.name == "run_worker" and thread is not threading.current_thread():
            thread.join(timeout)


def _worker_death(message: str) -> str:
    """ "killed by SIGKILL" from Beam's "Worker subprocess exited with return code 137" (the
    worker runs under `sh -c`, which reports a signal as 128 + N)."""
    code = message.rsplit(" ", 1)[-1]
    if not code.lstrip("-").isdigit():
        return "exited"
    number = int(code)
    signum = -number if number < 0 else number - 128 if number > 128 else 0
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"was killed by {name}" + (" (out of memory?)" if signum == signal.SIGKILL else "")
    return f"exited with status {number}"


@contextmanager
def watch_workers() -> Iterator[None]:
    """Fail the run, in one line, when a local worker process dies (an OOM kill, a crash), and
    let SIGTERM and Ctrl-C end it.

    Beam's FnApiRunner notices a dead worker only in the thread that started it, which raises
    and ends while the main thread waits for the worker's results forever; and on any exception
    its clean-up joins the threads of the live workers, which never end (so SIGTERM hung too).
    Here the dead worker's thread wakes the main thread (SIGUSR1); that, SIGTERM and SIGINT first
    kill every worker (so Beam's clean-up finds them gone), then raise: `StageFailed`, or what
    the previous handler raises (the CLI's SystemExit(143), KeyboardInterrupt). Thread errors
    and Beam's error logs after that are echoes of the stop and are not shown. Signals reach
    only the main thread: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from medsimp.errors import StageFailed

    died: list[str] = []
    main_ident = threading.main_thread().ident
    old_hook = threading.excepthook
    lock, stopping = threading.Lock(), threading.Event()
    logging_disabled = logging.root.manager.disable

    def hook(args) -> None:
        if (
            args.thread is not None
            and args.thread.name == "run_worker"
            and isinstance(args.exc_value, RuntimeError)
        ):
            with lock:  # one wake-up, and none once the run is being stopped
                if not died and not stopping.is_set() and main_ident is not None:
                    died.append(_worker_death(str(args.exc_value)))
                    signal.pthread_kill(main_ident, signal.SIGUSR1)
            return
        if died or stopping.is_set() or type(args.exc_value).__module__.startswith("grpc"):
            return  # a dead worker's echoes: its connections fail in Beam's threads
        old_hook(args)

    def stop() -> None:
        with lock:
            stopping.set()
        logging.disable(logging.CRITICAL)  # Beam logs its teardown of the workers as errors
        stop_workers()

    def on_death(signum, frame) -> None:
        if died:
            stop()
            raise StageFailed(f"a Beam worker process {died[0]}; the stage stopped and wrote no output")

    def stop_then(previous):
        def handler(signum, frame) -> None:
            stop()
            if callable(previous):
                previous(signum, frame)
            else:  # SIG_DFL: die of the signal, as without this handler
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        return handler

    handlers = {signal.SIGUSR1: on_death}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        if previous not in (signal.SIG_IGN, None):
            handlers[signum] = stop_then(previous)
    old_handlers = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    threading.excepthook = hook
    try:
        yield
    except BaseException:
        stop()
        raise
    finally:
        with lock:
            stopping.set()
        threading.excepthook = old_hook
        for signum, handler in old_handlers.items():
            signal.signal(signum, handler)
        logging.disable(logging_disabled)


def new_pipeline(beam_params: Beam | None = None, extra_args: Iterable[str] = ()) -> beam.Pipeline:
    """A Pipeline on `pipeline_options`.

    For the local FnApiRunner in `multi_processing` mode, the runner is built with FnApiRunner's
    public constructor arguments: `default_environment`, worker processes that run
    `pipelines.jobs.worker` (Beam's worker, quiet), and `provision_info` carrying
    `--default_sdk_harness_log_level` (the local runner does not hand pipeline options to its
    workers, which would otherwise log at INFO). The options then say `in_memory`, since
    FnApiRunner replaces its environment with Beam's own worker command for `multi_processing`;
    `direct_num_workers` still sets the number of worker processes."""
    options = pipeline_options(beam_params, extra_args)
    direct = options.view_as(DirectOptions)
    # the run record's `runner` and `workers` (a refresh report's per-stage figures)
    record_run(runner=options.view_as(StandardOptions).runner, workers=direct.direct_num_workers)
    if (
        options.view_as(StandardOptions).runner != "FnApiRunner"
        or direct.direct_running_mode != "multi_processing"
        or any(str(a).split("=")[0] == "--environment_type" for a in extra_args)
    ):
        return _LivePipeline(options=options)
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo, FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment
    from google.protobuf import struct_pb2

    direct.direct_running_mode = "in_memory"
    level = struct_pb2.Struct()
    level.update(
        {"default_sdk_harness_log_level": options.get_all_options()["default_sdk_harness_log_level"]}
    )
    info = ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(retrieval_token="unused-retrieval-token", pipeline_options=level)
    )
    # workers die with this process (worker.py); its start time tells a reused pid apart
    os.environ["MEDSIMP_LAUNCHER_PID"] = f"{os.getpid()}:{psutil.Process().create_time()!r}"
    # -P: the worker's current folder is not on its path (`-m` would put it first), so a folder
    # named like one of our packages there cannot shadow it (worker.py checks the siblings too)
    workers = SubprocessSDKEnvironment.from_command_string(f"{sys.executable} -P -m pipelines.jobs.worker")
    return _LivePipeline(
        runner=FnApiRunner(default_environment=workers, provision_info=info), options=options
    )


def trim_heap() -> None:
    """Give the C heap's free memory back to the OS (glibc `malloc_trim`; nothing elsewhere).

    A worker that embeds and aligns document after document frees what each document used,
    but glibc keeps the freed pages of its arenas, so resident memory creeps up with the number
    of documents (about 0.6 MB per review measured in one process; more in a Beam worker). A DoFn
    doing such work calls this after each element."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util

        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim  # noqa: B018 - glibc only
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def stable_shard(key: str, num_shards: int) -> int:
    """Shard index from a CRC32 of the key: the same on every machine and run."""
    return zlib.crc32(key.encode("utf-8")) % num_shards


def shard_name(prefix: str, index: int, num_shards: int, suffix: str) -> str:
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


ROW_GROUP_SIZE = 10_000  # rows per parquet row group (part of the output bytes; a writer holds one)
ARROW_CHUNK = 5_000  # rows a streamed write converts from dicts at once (not part of the bytes)
RUN_ROWS = 5_000  # rows a WriteSorted worker holds before it writes them, sorted, as a run


def _parquet_writer(sink, schema: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(sink, schema, compression="zstd", write_statistics=True)


def table_bytes(rows: list[dict], schema: pa.Schema, row_group_size: int = ROW_GROUP_SIZE) -> bytes:
    """Rows -> parquet bytes with fixed settings (deterministic for a pinned pyarrow)."""
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=row_group_size, write_statistics=True)
    return sink.getvalue()


def write_parquet_stream(
    sink, rows: Iterable[dict], schema: pa.Schema, row_group_size: int = ROW_GROUP_SIZE
) -> int:
    """Write rows to `sink` holding one row group at a time, in Arrow form (rows are converted
    `ARROW_CHUNK` at a time, so at most that many are Python dicts); the bytes are those of
    `table_bytes(list(rows), schema, row_group_size)`: same writer, same row groups (a
    chunked row group writes the bytes of a contiguous one: tests). An empty `rows` writes the
    empty table. Returns the number of rows."""
    writer = _parquet_writer(sink, schema)
    chunk_rows = math.gcd(row_group_size, ARROW_CHUNK)  # chunks tile a row group exactly
    batches: list[pa.Table] = []
    chunk: list[dict] = []
    held = n = 0

    def write_group() -> None:
        table = pa.concat_tables(batches) if batches else pa.Table.from_pylist([], schema=schema)
        writer.write_table(table, row_group_size=row_group_size)
        batches.clear()

    try:
        for row in rows:
            chunk.append(row)
            if len(chunk) == chunk_rows:
                batches.append(pa.Table.from_pylist(chunk, schema=schema))
                held, chunk = held + len(chunk), []
                if held == row_group_size:
                    write_group()
                    n, held = n + row_group_size, 0
        if chunk:
            batches.append(pa.Table.from_pylist(chunk, schema=schema))
            held += len(chunk)
        if batches or not n:
            write_group()
            n += held
    finally:
        writer.close()
    return n


def _run_path(out_dir: str, prefix: str, shard: int) -> str:
    """A hidden run file beside the shard it belongs to (no reader's `*.parquet` pattern
    matches it; `fill_empty_shards` deletes it after the pipeline)."""
    return FileSystems.join(out_dir, f".{prefix}-{shard:05d}-{uuid.uuid4().hex}.run")


def read_run(path: str) -> Iterator[dict]:
    """The rows of a run file, one at a time."""
    with FileSystems.open(path) as fh:
        while True:  # one pickle per row: a shared Unpickler's memo would not match the writer's
            try:
                yield pickle.load(fh)
            except EOFError:
                return


class _SpillRunsFn(beam.DoFn):
    """Rows -> (shard, run file): rows are routed to their shard and buffered; every
    `run_rows` rows, and at the end of a bundle, each shard's buffer is written sorted as a
    run (a pickle stream). A worker holds at most `run_rows` rows, whatever the data size."""

    def __init__(self, out_dir, prefix, num_shards, shard_key, sort_key, run_rows):
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.shard_key, self.sort_key, self.run_rows = shard_key, sort_key, run_rows

    def start_bundle(self):
        self.buffers: dict[int, list[dict]] = {}
        self.buffered = 0

    def process(self, row):
        self.buffers.setdefault(stable_shard(self.shard_key(row), self.num_shards), []).append(row)
        self.buffered += 1
        if self.buffered >= self.run_rows:
            yield from self._flush()

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindows

        for run in self._flush():
            yield GlobalWindows.windowed_value(run)

    def _flush(self) -> list[tuple[int, str]]:
        runs = []
        for shard in sorted(self.buffers):
            path = _run_path(self.out_dir, self.prefix, shard)
            with create_file(path) as fh:
                for row in sorted(self.buffers[shard], key=self.sort_key):
                    pickle.dump(row, fh, protocol=pickle.HIGHEST_PROTOCOL)
            runs.append((shard, path))
        self.buffers, self.buffered = {}, 0
        return runs


MERGE_FAN_IN = 64  # run files a merge reads at once; more are merged in passes first


def merge_runs(runs: list[str], sort_key: Callable[[dict], Any], out_dir: str, prefix: str, shard: int):
    """The rows of `runs` in sort order, with at most MERGE_FAN_IN files open: while there are
    more, the first MERGE_FAN_IN are merged into a new run (deleted once read). The given runs
    are never deleted here: a retried bundle must find them (`fill_empty_shards` removes every
    run file once the pipeline is done)."""
    runs, made = sorted(runs), set()
    try:
        while len(runs) > MERGE_FAN_IN:
            path = _run_path(out_dir, prefix, shard)
            made.add(path)
            merged = runs[:MERGE_FAN_IN]
            with create_file(path) as fh:
                for row in heapq.merge(*(read_run(r) for r in merged), key=sort_key):
                    pickle.dump(row, fh, protocol=pickle.HIGHEST_PROTOCOL)
            done = [r for r in merged if r in made]  # our own intermediates, now merged
            if done:
                delete_files(done)
                made.difference_update(done)
            runs = [*runs[MERGE_FAN_IN:], path]
        yield from heapq.merge(*(read_run(r) for r in runs), key=sort_key)
    finally:
        if made:
            delete_files(sorted(made))


class _MergeShardFn(beam.DoFn):
    """(shard, run files) -> the shard's file: the runs merged in sort order and written as
    they stream (a parquet row group at a time)."""

    def __init__(self, out_dir, prefix, num_shards, schema, sort_key, fmt):
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.schema, self.sort_key, self.fmt = schema, sort_key, fmt

    def process(self, element):
        index, runs = element
        rows = merge_runs(list(runs), self.sort_key, self.out_dir, self.prefix, index)
        suffix = ".parquet" if self.fmt == "parquet" else ".jsonl"
        path = FileSystems.join(self.out_dir, shard_name(self.prefix, index, self.num_shards, suffix))
        with create_file(path) as fh:
            if self.fmt == "parquet":
                write_parquet_stream(fh, rows, self.schema)
            else:
                for r in rows:
                    fh.write((json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
        yield path


class WriteSorted(beam.PTransform):
    """Write dict rows to `num_shards` sorted files under `out_dir` (parquet or jsonl).

    `shard_key(row)` picks the shard, `sort_key(row)` orders rows within it.
    Shards that receive no rows are written empty by `fill_empty_shards` after the run.

    Memory stays flat in the data size: workers write sorted runs of at most `run_rows` rows
    next to the output, and one merge per shard streams them into the shard's file (at most
    MERGE_FAN_IN runs open at once); only run file names are grouped, so the rows never cross
    a stage boundary (where the local runner would hold a whole PCollection in memory). Run
    files stay until `fill_empty_shards`, so a retried merge reads them again. Rows with equal sort keys may come in any
    order, as they could before; every job's sort key is unique per row.
    """

    def __init__(
        self,
        out_dir: str,
        *,
        prefix: str,
        num_shards: int,
        shard_key: Callable[[dict], str],
        sort_key: Callable[[dict], Any],
        schema: pa.Schema | None = None,
        fmt: str = "parquet",
        run_rows: int = RUN_ROWS,
    ):
        super().__init__()
        if fmt == "parquet" and schema is None:
            raise ValueError("parquet output needs a schema")
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.shard_key, self.sort_key, self.schema, self.fmt = shard_key, sort_key, schema, fmt
        self.run_rows = run_rows

    def expand(self, rows):
        n, out_dir, prefix = self.num_shards, self.out_dir, self.prefix
        return (
            rows
            | "SpillRuns"
            >> beam.ParDo(_SpillRunsFn(out_dir, prefix, n, self.shard_key, self.sort_key, self.run_rows))
            | "GroupRunsByShard" >> beam.GroupByKey()
            | "MergeShard"
            >> beam.ParDo(_MergeShardFn(out_dir, prefix, n, self.schema, self.sort_key, self.fmt))
        )


GROUP_SHARDS = 8  # merges of a GroupSorted: parallel work for up to this many workers
GROUP_RUN_ROWS = 500  # (key, value) pairs a GroupSorted worker holds: values are whole records


def _first(kv: tuple) -> Any:
    return kv[0]


class _MergeGroupsFn(beam.DoFn):
    """(shard, run files of (key, value) pairs sorted by key) -> (key, [values]) per key."""

    def __init__(self, tmp_dir: str, prefix: str):
        self.tmp_dir, self.prefix = tmp_dir, prefix

    def process(self, element):
        shard, runs = element
        merged = merge_runs(list(runs), _first, self.tmp_dir, self.prefix, shard)
        for key, group in itertools.groupby(merged, key=_first):
            yield key, [value for _, value in group]


class GroupSorted(beam.PTransform):
    """(key, value) -> (key, [values]): a GroupByKey that holds no data at a stage boundary.

    Workers write the pairs, sorted by key, as run files in `tmp_dir` (at most `run_rows`
    pairs held, see WriteSorted), only the run names are grouped, and one merge per shard
    (GROUP_SHARDS, by a stable hash of the key) yields each key's values. The local runner
    would hold a GroupByKey's whole input in the main process and hand each worker its
    whole share at once; a cluster runner shuffles either way. Keys must be orderable and
    equal keys must pickle alike (strings); values come in no particular order, as from a
    GroupByKey. The caller deletes the runs after the pipeline (`delete_runs(tmp_dir, prefix)`).
    """

    def __init__(self, tmp_dir: str, *, prefix: str = "group", run_rows: int = GROUP_RUN_ROWS):
        super().__init__()
        self.tmp_dir, self.prefix, self.run_rows = tmp_dir, prefix, run_rows

    def expand(self, pairs):
        spill = _SpillRunsFn(self.tmp_dir, self.prefix, GROUP_SHARDS, _first, _first, self.run_rows)
        return (
            pairs
            | "SpillRuns" >> beam.ParDo(spill)
            | "GroupRunsByShard" >> beam.GroupByKey()
            | "MergeGroups" >> beam.ParDo(_MergeGroupsFn(self.tmp_dir, self.prefix))
        )


def delete_runs(tmp_dir: str, prefix: str) -> None:
    """Delete the run files of `prefix` a WriteSorted or GroupSorted left in `tmp_dir` (a file
    another attempt removed first is fine); RuntimeError if any is left, since runs hold the
    rows in the clear and must never be published with the output."""
    for path in list_run_files(tmp_dir, prefix):
        try:
            delete_files([path])
        except BeamIOError:
            if FileSystems.exists(path):
                raise
    if list_run_files(tmp_dir, prefix):
        raise RuntimeError(f"run files of {prefix!r} are left in the output's staging folder")


class ReadRows(beam.PTransform):
    """Parquet files -> their rows, read `read_rows`' batch at a time in the worker that reads
    the file: memory does not grow with a file's row groups."""

    def __init__(self, files: list[str], columns: list[str] | None = None):
        super().__init__()
        self.files, self.columns = list(files), columns

    def expand(self, pbegin):
        columns = self.columns
        return (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Reshuffle" >> beam.Reshuffle()
            | "Rows" >> beam.FlatMap(lambda path: read_rows(path, columns))
        )


class ReadDocuments(beam.PTransform):
    """Parquet files in which each document's rows are consecutive and in one file (see
    `grouped_by`) -> (key, rows) per document, streamed a file at a time: what a GroupByKey
    on the key would give, without a sort or a group. A Reshuffle then spreads the documents
    over every worker, so the per-document work after it is parallel by document, not by file
    (one input file still keeps every worker busy)."""

    def __init__(self, files: list[str], key_columns: list[str], columns: list[str] | None = None):
        super().__init__()
        self.files, self.key_columns, self.columns = list(files), list(key_columns), columns

    def expand(self, pbegin):
        key_columns, columns = self.key_columns, self.columns
        return (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Reshuffle" >> beam.Reshuffle()
            | "Documents" >> beam.FlatMap(lambda path: read_documents(path, key_columns, columns))
            | "SpreadDocuments" >> beam.Reshuffle()
        )


def fill_empty_shards(
    out_dir: str, prefix: str, num_shards: int, schema: pa.Schema | None = None, fmt: str = "parquet"
) -> None:
    """After the pipeline: write an empty file for every shard it did not produce, and delete
    the run files `WriteSorted` left (those the merges read and those of retried bundles)."""
    suffix = ".parquet" if fmt == "parquet" else ".jsonl"
    for i in range(num_shards):
        path = FileSystems.join(out_dir, shard_name(prefix, i, num_shards, suffix))
        if not FileSystems.exists(path):
            with create_file(path) as fh:
                fh.write(table_bytes([], schema) if fmt == "parquet" else b"")
    delete_runs(out_dir, prefix)


def glob_escape(path: str) -> str:
    """`path` with glob characters bracketed, so a pattern built on it (`FileSystems.match`: the
    local filesystem's glob, fnmatch on object stores) matches the folder literally: an output
    named `out[v2]` must still find its own files."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in path)


def delete_files(paths: list[str]) -> None:
    """FileSystems.delete of these exact files: Beam's filesystems match what they delete as a
    pattern, so the paths are escaped (`glob_escape`)."""
    FileSystems.delete([glob_escape(p) for p in paths])


def list_run_files(out_dir: str, prefix: str) -> list[str]:
    """The `WriteSorted`/`GroupSorted` run files of `prefix` in `out_dir`."""
    pattern = FileSystems.join(glob_escape(out_dir), f".{prefix}-*.run")
    return sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)


def counters(result, namespace: str) -> dict[str, int] | None:
    """Committed Beam counter values of one namespace, by counter name; None when the runner
    gives no committed values (no metrics at all, or attempted values only, which a retried
    bundle counts twice): the caller then counts what was written instead."""
    import grpc
    from apache_beam.metrics.metric import MetricsFilter

    try:
        query = result.metrics().query(MetricsFilter().with_namespace(namespace))
    except (NotImplementedError, grpc.RpcError):  # a runner without metrics, or gone after the job
        return None
    items = list(query["counters"])
    if any(item.committed is None for item in items):
        return None
    out: dict[str, int] = {}
    for item in items:
        out[item.key.metric.name] = out.get(item.key.metric.name, 0) + int(item.committed)
    return out
