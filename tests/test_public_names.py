"""Every public package's names, as they were when each name came to be declared once.

The packages' ``__init__`` files declare each public name once (see `gradewire.core._lazy`),
and ``__all__`` is derived from that declaration. This list is the other side of the check: a
name added to or removed from a package is an API change, made here on purpose too.
"""

import importlib

import pytest

PUBLIC_NAMES = {
    "gradewire": """
        AnswerRelevancyGrader BackgroundSink BaseGrader BinaryJudgeGrader BinaryJudgeShot
        CombinedGrader CommandGrader ConsoleSink ContextRelevancyGrader EndpointGrader
        FailedJudgeLog FaithfulnessGrader FanOutSink Grade GradeTimeoutError
        GraderFailingError GradewireError GradingError Histogram IgnoreGradeException
        InvalidInputError InvalidTypeError JsonlSink JudgePanel JudgeShot LogState MathGrader
        MemorySink MissingDependencyError ModelCallError OpenAIChatModel OutputParserException
        PairwiseJudgeGrader RangeJudgeGrader RewardLogger RubricJudgeGrader SinkError
        StringThread SuccessJudgeLog Table __version__ agreement build_grader compare_runs
        contains contains_all contains_any exact_match f1_score grader_config load_graders
        load_run math_match normalize numeric_match openai_grader openrlhf_reward_func
        pydantic_parse render_schema run_eval run_sync serve
    """,
    "gradewire.cli": """
        main
    """,
    "gradewire.core": """
        BaseGrader CombinedGrader Grade GradeFunction GradeTimeoutError GraderFailingError
        GradewireError GradingError Histogram IgnoreGradeException InvalidInputError
        InvalidTypeError LogState LogValue MissingDependencyError ModelCallError
        OutputParserException Role SinkError Stats StringThread Table Turn attach_log_fields
        run_sync
    """,
    "gradewire.eval": """
        AlignmentCandidate JudgeAlignment align_judge
        BootstrapInterval CertificateError ChangedSample Comparison DataError DataOptions
        EvalDisplay EvalResult EvalRun EvalSample GradeOutcome GraderBoard GraderComparison
        GraderSummary GradingEngine GradingReport JudgeCertificate JudgedComparison
        Leaderboard LengthAudit MismatchedRunsError PairResult PositionAudit RetestAudit
        RichDisplay RunFolderError RunStanding SampleRecord SliceComparison
        ThresholdCalibration audit_length audit_position audit_retest calibrate_threshold
        certify_judge check_certificate compare_runs eval_engine judge_runs leaderboard
        load_run load_samples open_run paired_bootstrap render_comparison render_leaderboard
        render_report require_certificate run_eval write_report
    """,
    "gradewire.helpers": """
        MathGrader MathParseError MathTimeoutError contains contains_all contains_any
        exact_match f1_score math_match normalize numeric_match pydantic_parse render_schema
    """,
    "gradewire.http": """
        ModelHTTPError ParameterRefusedError RetryPolicy forget_endpoint_facts
    """,
    "gradewire.hud": """
        BashGrader EvaluationResult Grader LLMJudgeGrader SubScore _combine_subscores combine
        combine_all combine_any contains contains_all contains_any exact_match f1_score
        normalize numeric_match
    """,
    "gradewire.judges": """
        AnswerRelevancyGrader BinaryJudgeGrader BinaryJudgeShot ContextRelevancyGrader
        FailedJudgeLog FaithfulnessGrader JudgeGrader JudgePanel JudgeSettings JudgeShot
        JudgedSample PairwiseJudgeGrader RangeJudgeGrader RubricJudgeGrader SuccessJudgeLog
        identity_facts pair
    """,
    "gradewire.models": """
        AnthropicModel ChatCompletion ChatMessage ChatModel JudgeCache ModelClient
        ModelProfile ModelSettings ModelUsage OpenAIChatModel ServedModel StructuredSettings
        TokenLogprob TruncatedOutputError Usage complete_structured get_model
    """,
    "gradewire.openai": """
        ErrorKind FormulaError OpenAIGrader OpenAIGraderError OpenAIGraderSettings
        PythonGraderRuntimeError SampleParseError TemplateVariableError
        UnresponsiveRewardError openai_grader
    """,
    "gradewire.plot": """
        plot_comparison plot_histogram plot_steps
    """,
    "gradewire.server": """
        ServerSettings create_app serve
    """,
    "gradewire.sinks": """
        BackgroundSink BaseSink ConsoleSink DeliveryReport DeliverySettings FanOutSink
        JsonlRun JsonlSink Logs MemorySink PolicyState Rejection Sink StepLogs TablePolicy
        is_main_process process_rank read_jsonl read_spill read_spill_configs
    """,
    "gradewire.sinks.background": """
        BackgroundSink DeliveryReport DeliverySettings Rejection read_spill read_spill_configs
    """,
    "gradewire.specs": """
        build_grader grader_config load_graders
    """,
    "gradewire.stats": """
        Agreement MeanInterval PPIInterval agreement ppi_mean_difference ppi_mean_interval
    """,
    "gradewire.tools": """
        CommandGrader CompletionVia EndpointGrader
    """,
    "gradewire.train": """
        Alert FailurePolicy HealthSeries OpenRLHFRewardFunc RewardHealthError RewardLogger
        RewardMonitor StepWindow merge_log_states merge_windows openrlhf_reward_func
    """,
    "gradewire_inspect": """
        ABSTAINED read_inspect_log scorer state_thread
    """,
    "gradewire_mlflow": """
        DEFAULT_TABLE_POLICY STEP_COLUMN MlflowSink __version__ default_tracking_uri
    """,
    "gradewire_ray": """
        DEFAULT_CHANNEL VAL_SPLITS GradedDataset VerlReward drain_reward_stats grade_dataset
        install_verl_hook verl_compute_score
    """,
    "gradewire_transformers": """
        FAMILIES_TAG WANDB_STEP_METRIC GradewireCallback TrlReward trl_reward
    """,
    "gradewire_verifiers": """
        MASKED_METRIC RewardMasked Rubric rollout_thread
    """,
    "gradewire_wandb": """
        DEFAULT_TABLE_POLICY HTML_SUFFIX IncompleteRunError OfflineRun OfflineRunError
        WandbSink __version__ find_offline_runs read_offline_run
    """,
}

# Folders of a stage that group its modules: documented, but with no names of their own.
NO_NAMES = (
    "gradewire.eval.auditing",
    "gradewire.eval.comparing",
    "gradewire.eval.grading",
    "gradewire.eval.ranking",
    "gradewire.eval.reporting",
    "gradewire.eval.runs",
)

# The integrations' names resolve to modules that import their frameworks (torch, ray...).
SOURCE_PACKAGES = [name for name in PUBLIC_NAMES if name.split(".")[0] == "gradewire"]


@pytest.mark.parametrize("package", sorted(PUBLIC_NAMES))
def test_all_lists_exactly_the_public_names(package):
    module = importlib.import_module(package)
    # Sorted in every package (the integrations' lists were in ruff's isort order before).
    assert module.__all__ == sorted(PUBLIC_NAMES[package].split()), package


@pytest.mark.parametrize("package", sorted(PUBLIC_NAMES))
def test_dir_lists_the_public_names_and_no_other(package):
    module = importlib.import_module(package)
    listed = set(dir(module))
    assert set(module.__all__) <= listed, package
    assert {name for name in listed if not name.startswith("_")} <= set(module.__all__)


@pytest.mark.parametrize("package", NO_NAMES)
def test_a_grouping_folder_has_no_public_names(package):
    module = importlib.import_module(package)
    assert module.__doc__
    assert not hasattr(module, "__all__"), package


@pytest.mark.parametrize("package", SOURCE_PACKAGES)
def test_star_import_gives_the_public_names(package):
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(PUBLIC_NAMES[package].split()), package
    module = importlib.import_module(package)
    assert all(namespace[name] is getattr(module, name) for name in namespace), package
