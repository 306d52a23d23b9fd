"""The service's JSON shapes as TypedDicts. Generated from schemas/*.json by
clients/python/generate_models.py: do not edit. total=False: the comments mark required keys."""

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union  # noqa: F401

__all__ = ["ApplicationAttempt", "ApplicationConfig", "ApplicationList", "ApplicationState", "Application", "ConfigTemplateList", "ConfigTemplate", "ErrorBody", "Labels", "NodePool", "NodePoolsFile", "PodConfig", "ScheduleList", "ScheduleRecord", "Schedule", "SecretMount", "SizingRules", "Submission", "UnschedulableError", "UnschedulablePod"]


class ApplicationAttemptMemory(TypedDict, total=False):
    """The attempt's driver and executor memory (raised after an out-of-memory end)."""
    driver: str
    executor: str


class ApplicationAttempt(TypedDict, total=False):
    """One run of an application's driver."""
    attempt: int  # required
    driverPod: str
    startedAt: Optional[str]  # required
    endedAt: Optional[str]
    exitCode: Optional[int]
    reason: str
    detail: str
    counted: bool
    memory: "ApplicationAttemptMemory"


class ApplicationConfigRestartPolicy(TypedDict, total=False):
    """What happens when a run fails. `Never`: the application ends FAILED. `OnFailure`: the service starts a new attempt (a new driver, after `retryIntervalSeconds`) up to `retries` times; an attempt whose driver was evicted, lost with its node or deleted does not count, and one that ran out of memory is retried with more memory for that role. `Always` is kept for compatibility and behaves as `OnFailure`. In Kubernetes mode each attempt has a driver pod of its own (`<appName>-attempt-<n>` from attempt 2), started once the executors of the one before are gone; the driver pod's own restartPolicy is always `Never`."""
    type: Literal["Never", "OnFailure", "Always"]
    retries: int
    retryIntervalSeconds: int


class ApplicationConfigSizing(TypedDict, total=False):
    """How past runs of the job size this one (README, "Sizing from past runs")."""
    fromHistory: Literal["off", "recommend", "apply"]


class ApplicationConfig(TypedDict, total=False):
    """Configuration of a Spark application: in a submission's configOverrides, in a config template, and (merged, defaulted and sized) in the response."""
    type: Literal["Scala", "Java", "Python", "R"]
    engineVersion: str
    pythonVersion: Literal["2", "3"]
    mode: Literal["cluster"]
    image: str
    mainApplicationFile: str
    mainClass: str
    arguments: List[str]
    engineConf: Dict[str, str]
    driver: "PodConfig"
    executor: "PodConfig"
    restartPolicy: "ApplicationConfigRestartPolicy"
    sizing: "ApplicationConfigSizing"


class ApplicationList(TypedDict, total=False):
    """One page of applications, newest first (by `createdAt`, then `appName` descending); `next` is the cursor of the following page."""
    items: List["Application"]  # required
    next: Optional[str]  # required


ApplicationState = Literal["PENDING", "RUNNING", "COMPLETED", "FAILED", "KILLED", "UNKNOWN"]


class ApplicationSparkUi(TypedDict, total=False):
    """Which Spark UI the application's one link (`url`, the dashboard's) opens now: `live`, the running driver's own; `history`, its run rendered by Spark's History Server after the driver ended (until `expiresAt`, the retention); `unavailable`, neither (not started yet, no event log, or expired)."""
    state: Literal["live", "history", "unavailable"]  # required
    url: Optional[str]  # required
    expiresAt: Optional[str]  # required


class ApplicationCost(TypedDict, total=False):
    """What the run cost, once it ended and its event log was read (local mode): core-hours and GiB-hours its pods requested (driver and executors, for as long as each was held) and used (task CPU time; each executor's peak memory over its life). `used*` are null when no event log could be read."""
    requestedCoreHours: float  # required
    requestedGibHours: float  # required
    usedCoreHours: Optional[float]  # required
    usedGibHours: Optional[float]  # required


class ApplicationTransitions(TypedDict, total=False):
    state: "ApplicationState"  # required
    at: str  # required
    detail: str


class Application(TypedDict, total=False):
    """A submitted application and its record."""
    appName: str  # required
    jobName: str  # required
    configTemplateName: str  # required
    labels: "Labels"
    submittedBy: Optional[str]
    config: "ApplicationConfig"  # required
    state: "ApplicationState"
    stateDetail: str
    attempt: int
    attempts: List["ApplicationAttempt"]
    createdAt: str
    startedAt: Optional[str]
    endedAt: Optional[str]
    runningExecutors: int
    sparkUi: "ApplicationSparkUi"
    cost: "ApplicationCost"
    transitions: List["ApplicationTransitions"]


class ConfigTemplateList(TypedDict, total=False):
    items: List["ConfigTemplate"]  # required


class ConfigTemplate(TypedDict, total=False):
    """A reusable, possibly partial application config. Also the spec of the ConfigTemplate custom resource."""
    name: str  # required
    config: "ApplicationConfig"  # required


class ErrorBody(TypedDict, total=False):
    """Every error answer: a message a person can act on, and what it concerns."""
    message: str  # required
    statusCode: int
    error: str
    code: str
    field: str


Labels = Dict[str, str]


class NodePool(TypedDict, total=False):
    """One node pool of the cluster. The schedulable maxima default to SPEC's rule 5 (85% of the CPU; 75% of the memory divided by 1.4) when absent."""
    cloudProvider: str  # required
    cpu: int  # required
    instanceName: str  # required
    maximumSchedulableCoreRequest: float
    maximumSchedulableMemoryRequestMib: int
    memoryMib: int  # required
    preemptible: bool  # required


class NodePoolsFilePolicy(TypedDict, total=False):
    """What a submission's configOverrides may name, and who may act on whose applications (docs/security.md)."""
    serviceAccounts: List[str]
    secrets: List[str]
    usersActOnAllApplications: bool
    kubernetesProperties: List[str]


class NodePoolsFileHistory(TypedDict, total=False):
    """Event logs for every application and the Spark History Server (README "History"); Kubernetes mode."""
    enabled: bool
    eventLogDir: str
    rollingMaxFileSize: str
    s3Endpoint: str
    pathStyleAccess: bool
    s3Region: str
    credentialsSecret: str
    driverKeys: Literal["shared", "versitygw"]
    incomingDir: str
    storeAdminEndpoint: str
    logArchiveDir: str
    serverUrl: str


class NodePoolsFileLimits(TypedDict, total=False):
    """Per-key limits (README "Limits"); 0 turns one off. The command line's flags win over these."""
    submissionsPerMinute: int
    applicationsPerKey: int
    streamsPerKey: int
    websocketsPerKey: int


class NodePoolsFile(TypedDict, total=False):
    """The --node-pools file (the format of example-cluster.json). Other top-level keys are ignored."""
    nodePools: List["NodePool"]  # required
    sizing: "SizingRules"
    policy: "NodePoolsFilePolicy"
    history: "NodePoolsFileHistory"
    limits: "NodePoolsFileLimits"


class PodConfig(TypedDict, total=False):
    """Resources and settings of the driver pod or of each executor pod."""
    cores: int
    coreRequest: str
    coreLimit: str
    memory: str
    instances: int
    serviceAccount: str
    labels: Dict[str, str]
    annotations: Dict[str, str]
    env: Dict[str, str]
    secrets: List["SecretMount"]


class ScheduleList(TypedDict, total=False):
    items: List["ScheduleRecord"]  # required


class ScheduleRecord(TypedDict, total=False):
    """A schedule as the API answers it: its spec, who owns it, and what its ticks did."""
    name: str  # required
    schedule: str  # required
    timeZone: str
    jobName: str  # required
    configTemplateName: str
    configOverrides: "ApplicationConfig"
    labels: "Labels"
    concurrencyPolicy: Literal["Allow", "Forbid", "Replace"]
    suspend: bool
    startingDeadlineSeconds: int
    successfulRunsHistoryLimit: int
    failedRunsHistoryLimit: int
    createdBy: Optional[str]  # required
    createdAt: str  # required
    lastScheduleTime: Optional[str]
    lastRunName: Optional[str]
    lastOutcome: Optional[str]
    nextRunAt: Optional[str]


class Schedule(TypedDict, total=False):
    """Body of POST /api/schedules/ and PUT /api/schedules/{name}: a submission made on a cron schedule. Also the spec of the Schedule custom resource."""
    name: str  # required
    schedule: str  # required
    timeZone: str
    jobName: str  # required
    configTemplateName: str
    configOverrides: "ApplicationConfig"
    labels: "Labels"
    concurrencyPolicy: Literal["Allow", "Forbid", "Replace"]
    suspend: bool
    startingDeadlineSeconds: int
    successfulRunsHistoryLimit: int
    failedRunsHistoryLimit: int


class SecretMount(TypedDict, total=False):
    """A Kubernetes Secret of the applications' namespace mounted into driver and executor pods."""
    name: str  # required
    path: str  # required
    secretType: Literal["Generic", "CloudServiceAccount"]


class SizingRules(TypedDict, total=False):
    """Tunable sizing rules (all optional)."""
    defaultDriverCores: int
    defaultDriverCoreRequestReserveMillicores: int
    memoryOverheadFactor: float
    nonAllocatableCpuFraction: float
    nonAllocatableMemoryFraction: float


class Submission(TypedDict, total=False):
    """Body of POST /api/apps/."""
    jobName: str  # required
    configTemplateName: str
    configOverrides: "ApplicationConfig"
    labels: "Labels"


class UnschedulableError(TypedDict, total=False):
    """422: a pod of the application fits no node pool."""
    advice: str  # required
    message: str  # required
    driver: "UnschedulablePod"
    executor: "UnschedulablePod"


class UnschedulablePodAvailableNodePools(TypedDict, total=False):
    cloudProvider: str  # required
    cpu: int  # required
    instanceName: str  # required
    maximumSchedulableCoreRequest: float  # required
    maximumSchedulableMemoryRequestMib: int  # required
    memoryMib: int  # required
    preemptible: bool  # required


class UnschedulablePod(TypedDict, total=False):
    availableNodePools: List["UnschedulablePodAvailableNodePools"]  # required
    targetInputConfig: "PodConfig"  # required
