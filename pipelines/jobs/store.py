"""Object stores for the jobs: `s3://` files written whole or not at all (`create_file`: one PUT
under `PART_BYTES`, else a multipart upload aborted on any error), unfinished uploads aborted
(`abort_uploads`), and every `s3://` input or output checked before the work with a client
bounded in time (`check_store`, `use_store`: one line for a missing bucket or an unreachable
endpoint). The jobs' workers reach the same store with the settings their DoFns carry
(`pipelines.jobs.store_dofn`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, S3Options

from medsimp.errors import UsageError
from medsimp.params_schema import Beam
from pipelines.jobs.beam_io import pipeline_options
from pipelines.jobs.store_dofn import filesystem_options

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
    from apache_beam.options.value_provider import RuntimeValueProvider

    options = filesystem_options()  # what Beam's own get_filesystem hands S3FileSystem
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
