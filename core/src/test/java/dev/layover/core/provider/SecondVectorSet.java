package dev.layover.core.provider;

import static dev.layover.core.provider.FailureClass.AUTH_REFUSED;
import static dev.layover.core.provider.FailureClass.BAD_REQUEST;
import static dev.layover.core.provider.FailureClass.OVERLOADED;
import static dev.layover.core.provider.FailureClass.QUOTA_EXHAUSTED;
import static dev.layover.core.provider.FailureClass.RATE_LIMITED;
import static dev.layover.core.provider.FailureClass.TRANSIENT;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A second set of documented error responses, beyond the first set of {@link DocumentedVectorsTest}:
 * the big five again for shapes the first set lacks, and the OpenAI-compatible servers reached with
 * openai-java and a base URL. Each vector names the server it comes from and cites where its shape
 * is documented. The clock stands at {@link #NOW}.
 */
final class SecondVectorSet {

    static final Instant NOW = Instant.parse("2026-05-28T10:15:30Z");

    /** NOW in epoch seconds and the next UTC midnight, for reset headers. */
    static final long NOW_EPOCH = 1_779_963_330L;
    static final Instant UTC_MIDNIGHT = Instant.parse("2026-05-29T00:00:00Z");
    static final Instant PACIFIC_MIDNIGHT = Instant.parse("2026-05-29T07:00:00Z");

    /**
     * One documented response and what it must be read as.
     *
     * @param server the server it comes from: openai, azure, anthropic, gemini, bedrock, groq, mistral,
     *     deepseek, openrouter, together, fireworks, xai, vllm, ollama, gateway
     */
    record Vector(String name, String server, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Duration retryAfter, Instant resetAt) {
        @Override
        public String toString() {
            return server + ": " + name;
        }
    }

    private SecondVectorSet() {}

    static List<Vector> all() {
        List<Vector> all = new ArrayList<>();
        all.addAll(openAi());
        all.addAll(azure());
        all.addAll(anthropic());
        all.addAll(gemini());
        all.addAll(bedrock());
        all.addAll(groq());
        all.addAll(mistral());
        all.addAll(deepSeek());
        all.addAll(openRouter());
        all.addAll(together());
        all.addAll(fireworks());
        all.addAll(xai());
        all.addAll(vllm());
        all.addAll(ollama());
        all.addAll(gateways());
        return all;
    }

    // ---- OpenAI ----------------------------------------------------------------------------

    static List<Vector> openAi() {
        String s = "openai";
        return List.of(
                // platform.openai.com/docs/guides/error-codes, 429 "The engine is currently overloaded"
                v("engineOverloadedUnder429IsOverloaded", s, 429, h(), """
                        {"error":{"message":"The engine is currently overloaded, please try again later",\
                        "type":"server_error","param":null,"code":null}}""", OVERLOADED),
                // openai/openai-python#414: "That model is currently overloaded with other requests"
                v("modelOverloadedWithOtherRequestsIsOverloaded", s, 429, h(), """
                        {"error":{"message":"That model is currently overloaded with other requests. You can retry \
                        your request, or contact us through our help center at help.openai.com if the error \
                        persists. (Please include the request ID fac8b65ed1c009c456a00410c4f6c376 in your \
                        message.)","type":"server_error","param":null,"code":null}}""", OVERLOADED),
                // 413 "Maximum content size limit (26214400) exceeded": never retried
                v("maximumContentSize413IsRejectedThoughTypedServerError", s, 413, h(), """
                        {"error":{"message":"Maximum content size limit (26214400) exceeded (26417812 bytes read)",\
                        "type":"server_error","param":null,"code":null}}""", BAD_REQUEST),
                // error-codes guide, safety system refusal (code content_policy_violation)
                v("safetySystemRefusalIsRejected", s, 400, h(), """
                        {"error":{"message":"Your request was rejected as a result of our safety system. Your prompt \
                        may contain text that is not allowed by our safety system.","type":"invalid_request_error",\
                        "param":null,"code":"content_policy_violation"}}""", BAD_REQUEST),
                // error-codes guide, 503 "Slow Down"
                v("slowDown503IsOverloaded", s, 503, h(), """
                        {"error":{"message":"Slow Down: A sudden increase in your request rate is impacting service \
                        reliability. Please reduce your request rate to its original level.","type":"server_error",\
                        "param":null,"code":null}}""", OVERLOADED),
                // error-codes guide, 401 "You must be a member of an organization to use the API"
                v("noOrganization401IsAuthRefused", s, 401, h(), """
                        {"error":{"message":"You must be a member of an organization to use the API. Please contact \
                        us through our help center at help.openai.com.","type":"invalid_request_error",\
                        "param":null,"code":"no_organization"}}""", AUTH_REFUSED),
                // error-codes guide, billing_not_active
                v("billingNotActiveIsQuota", s, 429, h(), """
                        {"error":{"message":"Your account is not active, please check your billing details on our \
                        website.","type":"billing_not_active","param":null,"code":"billing_not_active"}}""",
                        QUOTA_EXHAUSTED),
                // api-reference: invalid parameter
                v("invalidParameterIsRejected", s, 400, h(), """
                        {"error":{"message":"Invalid 'max_tokens': integer below minimum value. Expected a value >= \
                        1, but got 0 instead.","type":"invalid_request_error","param":"max_tokens",\
                        "code":"integer_below_min_value"}}""", BAD_REQUEST));
    }

    // ---- Azure OpenAI ----------------------------------------------------------------------

    static List<Vector> azure() {
        String s = "azure";
        Duration replenish = Duration.ofDays(2).plusHours(12).plusMinutes(43).plusSeconds(8);
        return List.of(
                // learn.microsoft.com/azure/api-management/quota-policy: 403 and Retry-After, message
                // "Out of call volume quota. Quota will be replenished in 2.12:43:08."
                v("apimQuota403IsQuotaUntilReplenished", s, 403, h("Retry-After", "218588"), """
                        {"statusCode": 403, "message": "Out of call volume quota. Quota will be replenished in \
                        2.12:43:08."}""", QUOTA_EXHAUSTED, replenish, NOW.plus(replenish)),
                // same policy, when a proxy dropped the Retry-After: the sentence alone says when
                v("apimQuotaSentenceAloneGivesTheReset", s, 403, h(), """
                        {"statusCode": 403, "message": "Out of call volume quota. Quota will be replenished in \
                        00:42:10."}""", QUOTA_EXHAUSTED, Duration.ofSeconds(2530), NOW.plusSeconds(2530)),
                // quota-policy with a bandwidth quota
                v("apimBandwidthQuotaIsQuota", s, 403, h(), """
                        {"statusCode": 403, "message": "Out of bandwidth quota. Quota will be replenished in \
                        00:10:00."}""", QUOTA_EXHAUSTED, Duration.ofMinutes(10), NOW.plus(Duration.ofMinutes(10))),
                // learn.microsoft.com/azure/api-management/rate-limit-policy: 429 "Try again in N seconds"
                v("apimRateLimit429ReadsItsWait", s, 429, h("Retry-After", "5"), """
                        {"statusCode": 429, "message": "Rate limit is exceeded. Try again in 5 seconds."}""",
                        RATE_LIMITED, Duration.ofSeconds(5), null),
                // learn.microsoft.com/azure/ai-services/openai/quotas-limits: call rate limit
                v("callRateLimitWithRetryAfter", s, 429,
                        h("retry-after", "37", "x-ratelimit-remaining-requests", "0", "x-ms-region", "East US"), """
                        {"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under \
                        Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current AIServices \
                        S0 pricing tier. Please retry after 37 seconds."}}""", RATE_LIMITED, Duration.ofSeconds(37),
                        null),
                // concepts/content-filter: jailbreak, inner error ResponsibleAIPolicyViolation
                v("contentFilterWithInnerErrorIsRejected", s, 400, h(), """
                        {"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's \
                        content management policy.","type":null,"param":"prompt","code":"content_filter",\
                        "status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":\
                        {"jailbreak":{"filtered":true,"detected":true}}}}}""", BAD_REQUEST),
                // reference: 503 ServiceUnavailable
                v("serviceUnavailable503IsOverloaded", s, 503, h(), """
                        {"error":{"code":"ServiceUnavailable","message":"The service is temporarily unable to \
                        process your request. Please try again later."}}""", OVERLOADED),
                // reference: DeploymentNotFound
                v("deploymentNotFoundIsRejected", s, 404, h(), """
                        {"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does \
                        not exist. If you created the deployment within the last 5 minutes, please wait a moment \
                        and try again."}}""", BAD_REQUEST),
                // Entra ID token refused by the gateway
                v("missingOrExpiredTokenIsAuthRefused", s, 401, h(), """
                        {"statusCode": 401, "message": "Unauthorized. Access token is missing, invalid, audience is \
                        incorrect (https://cognitiveservices.azure.com), or have expired."}""", AUTH_REFUSED));
    }

    // ---- Anthropic (and Claude on Vertex) -----------------------------------------------------

    static List<Vector> anthropic() {
        String s = "anthropic";
        return List.of(
                // anthropics/claude-code#8118: a 500 api_error whose message is "Overloaded"
                v("apiError500SayingOverloadedIsOverloaded", s, 500, h(), """
                        {"type":"error","error":{"type":"api_error","message":"Overloaded"},"request_id":null}""",
                        OVERLOADED),
                // docs.anthropic.com/en/api/rate-limits: concurrent connections, retry-after
                v("concurrentConnectionsRateLimitReadsRetryAfter", s, 429, h("retry-after", "5"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"Number of concurrent \
                        connections has exceeded your rate limit. Please try again later or contact sales at \
                        https://www.anthropic.com/contact-sales to discuss your options for a rate limit \
                        increase."}}""", RATE_LIMITED, Duration.ofSeconds(5), null),
                // docs.anthropic.com/en/api/errors: acceleration limit 429
                v("accelerationLimitIsRateLimited", s, 429, h("retry-after", "12"), """
                        {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your \
                        organization's maximum usage increase rate. Please reduce your usage growth."}}""",
                        RATE_LIMITED, Duration.ofSeconds(12), null),
                // docs.anthropic.com/en/api/errors: 403 permission_error
                v("modelAccessPermissionErrorIsAuthRefused", s, 403, h(), """
                        {"type":"error","error":{"type":"permission_error","message":"Your organization does not \
                        have access to this model."}}""", AUTH_REFUSED),
                // docs.anthropic.com/en/docs/build-with-claude/streaming#error-events: api_error event
                v("apiErrorEventInsideA200StreamIsTransient", s, 200, h("content-type", "text/event-stream"), """
                        event: message_start
                        data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}

                        event: error
                        data: {"type":"error","error":{"type":"api_error","message":"Internal server error"}}

                        """, TRANSIENT),
                // cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude: quota on Vertex
                v("claudeOnVertexTokensQuotaIsRateLimited", s, 429, h(), """
                        {"error":{"code":429,"message":"Quota exceeded for \
                        aiplatform.googleapis.com/online_prediction_tokens_per_minute_per_base_model with base \
                        model: anthropic-claude-sonnet-4. Please submit a quota increase request. \
                        https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.","status":\
                        "RESOURCE_EXHAUSTED"}}""", RATE_LIMITED),
                // docs.anthropic.com/en/api/errors: 413 request_too_large, sent by the edge before the API
                v("requestTooLarge413WithoutBodyIsRejected", s, 413, h("content-type", "text/html"), """
                        <html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 \
                        Request Entity Too Large</h1></center></body></html>""", BAD_REQUEST));
    }

    // ---- Gemini and Vertex AI --------------------------------------------------------------

    static List<Vector> gemini() {
        String s = "gemini";
        return List.of(
                // ai.google.dev/gemini-api/docs/troubleshooting: 429 RESOURCE_EXHAUSTED without details
                v("resourceExhaustedWithoutDetailsIsRateLimited", s, 429, h(), """
                        {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",\
                        "status":"RESOURCE_EXHAUSTED"}}""", RATE_LIMITED),
                // Vertex 429 in the older shape with errors[].reason (google-gemini/gemini-cli#14831)
                v("vertexRateLimitExceededReasonIsRateLimited", s, 429, h(), """
                        {"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to \
                        https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",\
                        "errors":[{"message":"Resource exhausted. Please try again later.","domain":"global",\
                        "reason":"rateLimitExceeded"}],"status":"RESOURCE_EXHAUSTED"}}""", RATE_LIMITED),
                // cloud.google.com/vertex-ai/generative-ai/docs/quotas: a per-day quota named in the message
                v("vertexRequestsPerDayQuotaIsQuota", s, 429, h(), """
                        {"error":{"code":429,"message":"Quota exceeded for \
                        aiplatform.googleapis.com/generate_content_requests_per_day_per_project_per_base_model with \
                        base model: gemini-2.0-flash. Please submit a quota increase request.",\
                        "status":"RESOURCE_EXHAUSTED"}}""", QUOTA_EXHAUSTED),
                // troubleshooting: 403 PERMISSION_DENIED
                v("projectDeniedAccessIsAuthRefused", s, 403, h(), """
                        {"error":{"code":403,"message":"Your project has been denied access. Please contact \
                        support.","status":"PERMISSION_DENIED"}}""", AUTH_REFUSED),
                // cloud.google.com/apis/design/errors: PERMISSION_DENIED with ErrorInfo BILLING_DISABLED is money
                v("billingDisabled403IsQuota", s, 403, h(), """
                        {"error":{"code":403,"message":"This API method requires billing to be enabled. Please enable \
                        billing on project #123 by visiting https://console.developers.google.com/billing/enable?\
                        project=123 then retry.","status":"PERMISSION_DENIED","details":[{"@type":\
                        "type.googleapis.com/google.rpc.ErrorInfo","reason":"BILLING_DISABLED","domain":\
                        "googleapis.com","metadata":{"consumer":"projects/123","service":\
                        "generativelanguage.googleapis.com"}}]}}""", QUOTA_EXHAUSTED),
                // troubleshooting: 400 FAILED_PRECONDITION, free tier not in this country
                v("freeTierNotAvailableIsRejected", s, 400, h(), """
                        {"error":{"code":400,"message":"Gemini API free tier is not available in your country. \
                        Please enable billing on your project in Google AI Studio.","status":\
                        "FAILED_PRECONDITION"}}""", BAD_REQUEST),
                // rate-limits: requests per day, with RetryInfo
                v("perDayQuotaIsQuotaUntilPacificMidnight", s, 429, h(), """
                        {"error":{"code":429,"message":"You exceeded your current quota, please check your plan and \
                        billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":\
                        "type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":\
                        "generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":\
                        "GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"20"}]},{"@type":\
                        "type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]}}""",
                        QUOTA_EXHAUSTED, Duration.ofSeconds(43), PACIFIC_MIDNIGHT),
                // troubleshooting: 503 UNAVAILABLE on Vertex
                v("vertexServiceUnavailableIsOverloaded", s, 503, h(), """
                        {"error":{"code":503,"message":"The service is currently unavailable.","status":\
                        "UNAVAILABLE"}}""", OVERLOADED),
                // troubleshooting: 500 INTERNAL that says the model is overloaded
                v("internal500SayingOverloadedIsOverloaded", s, 500, h(), """
                        {"error":{"code":500,"message":"The model is overloaded. Please try again later.",\
                        "status":"INTERNAL"}}""", OVERLOADED),
                // streamGenerateContent: an INTERNAL chunk inside a 200 stream
                v("internalChunkInside200StreamIsTransient", s, 200, h("content-type", "text/event-stream"), """
                        data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}

                        data: {"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}

                        """, TRANSIENT),
                // troubleshooting: 504 DEADLINE_EXCEEDED
                v("deadlineExceededIsTransient", s, 504, h(), """
                        {"error":{"code":504,"message":"The request timed out. Please try again.","status":\
                        "DEADLINE_EXCEEDED"}}""", TRANSIENT));
    }

    // ---- Bedrock ---------------------------------------------------------------------------

    static List<Vector> bedrock() {
        String s = "bedrock";
        String amzn = "x-amzn-ErrorType";
        // docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors
        return List.of(
                v("tooManyTokensThrottlingIsRateLimited", s, 429, h(amzn, "ThrottlingException"), """
                        {"message":"Too many tokens, please wait before trying again."}""", RATE_LIMITED),
                v("inputTooLongValidationIsRejected", s, 400, h(amzn, "ValidationException"), """
                        {"message":"Input is too long for requested model."}""", BAD_REQUEST),
                v("promptTooLongFromTheModelIsRejected", s, 400, h(amzn, "ValidationException"), """
                        {"message":"The model returned the following errors: prompt is too long: 210000 tokens > \
                        200000 maximum"}""", BAD_REQUEST),
                v("modelNotReady429IsOverloaded", s, 429, h(amzn, "ModelNotReadyException"), """
                        {"message":"Model is not ready to serve inference requests."}""", OVERLOADED),
                v("serviceUnavailableIsOverloaded", s, 503, h(amzn, "ServiceUnavailableException"), """
                        {"message":"Service is temporarily unavailable."}""", OVERLOADED),
                v("internalServerIsTransient", s, 500, h(amzn, "InternalServerException"), """
                        {"message":"The request processing has failed because of an unknown error, exception or \
                        failure."}""", TRANSIENT),
                v("accessDeniedIsAuthRefused", s, 403, h(amzn, "AccessDeniedException"), """
                        {"message":"You don't have access to the model with the specified model ID."}""",
                        AUTH_REFUSED),
                v("serviceQuotaExceededIsQuota", s, 400, h(amzn, "ServiceQuotaExceededException"), """
                        {"message":"Your request exceeds the service quota for your account."}""", QUOTA_EXHAUSTED),
                v("modelTimeoutIsTransient", s, 408, h(amzn, "ModelTimeoutException"), """
                        {"message":"Model has timed out in processing the request. Try your request again."}""",
                        TRANSIENT));
    }

    // ---- Groq ------------------------------------------------------------------------------

    static List<Vector> groq() {
        String s = "groq";
        String region = "x-groq-region";
        return List.of(
                // console.groq.com/docs/flex-processing: "fail quickly with status 498 and error capacity_exceeded"
                v("flexCapacityExceeded498IsOverloaded", s, 498, h(region, "gcp-asia-south1"), """
                        {"error":{"message":"Flex tier capacity exceeded. This is a known issue that happens \
                        occasionally. Please try again later.","type":"internal_server_error",\
                        "code":"capacity_exceeded"}}""", OVERLOADED),
                // console.groq.com/docs/errors: 498 without a body
                v("status498WithoutBodyIsOverloaded", s, 498, h(region, "us-east-1"), null, OVERLOADED),
                // console.groq.com/docs/rate-limits: retry-after only on 429s, and it wins
                v("tpm429ReadsRetryAfter", s, 429,
                        h("retry-after", "5", "x-ratelimit-limit-tokens", "15000", "x-ratelimit-remaining-tokens", "0",
                                "x-ratelimit-reset-tokens", "5.289s", region, "us-east-1"), """
                        {"error":{"message":"Rate limit reached for model `gemma2-9b-it` in organization \
                        `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 15000, Used 11972, \
                        Requested 4351. Please try again in 5.289s. Visit https://console.groq.com/docs/rate-limits \
                        for more information.","type":"tokens","code":"rate_limit_exceeded"}}""",
                        RATE_LIMITED, Duration.ofSeconds(5), null),
                // rate-limits: requests per day
                v("requestsPerDayIsQuota", s, 429, h("retry-after", "87", region, "us-east-1"), """
                        {"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization \
                        `org_01` service tier `on_demand` on requests per day (RPD): Limit 1000, Used 1000, \
                        Requested 1. Please try again in 1m26.4s.","type":"requests","code":"rate_limit_exceeded"}}""",
                        QUOTA_EXHAUSTED, Duration.ofSeconds(87), NOW.plusSeconds(87)),
                // errors: 413 "Request too large ... on tokens per minute (TPM): Limit 6000, Requested 7283"
                v("requestLargerThanTpm413IsRejected", s, 413, h(region, "us-east-1"), """
                        {"error":{"message":"Request too large for model `llama3-70b-8192` in organization \
                        `org_01` on tokens per minute (TPM): Limit 6000, Requested 7283, please reduce your message \
                        size and try again.","type":"tokens","code":"rate_limit_exceeded"}}""", BAD_REQUEST),
                // errors: 401
                v("invalidApiKeyIsAuthRefused", s, 401, h(), """
                        {"error":{"message":"Invalid API Key","type":"invalid_request_error",\
                        "code":"invalid_api_key"}}""", AUTH_REFUSED),
                // errors: 499 "Client Closed Request"
                v("clientClosedRequest499IsTransient", s, 499, h(region, "us-east-1"), null, TRANSIENT),
                // errors: 503
                v("serviceUnavailableIsOverloaded", s, 503, h(), """
                        {"error":{"message":"Service Unavailable","type":"internal_server_error"}}""", OVERLOADED),
                // errors: 404 model_not_found
                v("modelNotFoundIsRejected", s, 404, h(), """
                        {"error":{"message":"The model `llama-9` does not exist or you do not have access to it.",\
                        "type":"invalid_request_error","code":"model_not_found"}}""", BAD_REQUEST));
    }

    // ---- Mistral ---------------------------------------------------------------------------

    static List<Vector> mistral() {
        String s = "mistral";
        return List.of(
                // continuedev/continue#6185: capacity said in words under a 429
                v("serviceTierCapacityExceededIsOverloaded", s, 429, h(), """
                        {"object":"error","message":"Service tier capacity exceeded for this model.",\
                        "type":"invalid_request_error","param":null,"code":null}""", OVERLOADED),
                // raycast/extensions#31107: code 1300
                v("rateLimitedCode1300IsRateLimited", s, 429, h(), """
                        {"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,\
                        "code":"1300","raw_status_code":429}""", RATE_LIMITED),
                // docs.mistral.ai/resources/error-glossary; dnakov/anon-kode#53
                v("bareRequestsRateLimitIsRateLimited", s, 429, h(), """
                        {"message":"Requests rate limit exceeded"}""", RATE_LIMITED),
                // coolcline/CoolCline#36
                v("unauthorizedIsAuthRefused", s, 401, h(), """
                        {"message":"Unauthorized","request_id":"933f233947ff6d346065bb297e4a4d56"}""", AUTH_REFUSED),
                // agent0ai/agent-zero#539: FastAPI's detail
                v("detailUnauthorizedIsAuthRefused", s, 401, h(), """
                        {"detail":"Unauthorized"}""", AUTH_REFUSED),
                // error-glossary: 400 context too long
                v("contextTooLongIsRejected", s, 400, h(), """
                        {"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for \
                        model with 32768 maximum context length","type":"invalid_request_error","param":null,\
                        "code":null}""", BAD_REQUEST),
                // error-glossary: 422 validation, message is an object
                v("validation422IsRejected", s, 422, h(), """
                        {"object":"error","message":{"detail":[{"type":"missing","loc":["body","messages"],\
                        "msg":"Field required"}]},"type":"invalid_request_error","param":null,"code":null}""",
                        BAD_REQUEST),
                // error-glossary: 402 Payment required
                v("paymentRequired402IsQuota", s, 402, h(), """
                        {"object":"error","message":"Payment required","type":"invalid_request_error",\
                        "param":null,"code":null}""", QUOTA_EXHAUSTED),
                // error-glossary: 503
                v("serviceUnavailableIsOverloaded", s, 503, h(), """
                        {"object":"error","message":"Service unavailable","type":"server_error","param":null,\
                        "code":null}""", OVERLOADED));
    }

    // ---- DeepSeek --------------------------------------------------------------------------

    static List<Vector> deepSeek() {
        String s = "deepseek";
        // api-docs.deepseek.com/quick_start/error_codes; bodies as in Aider-AI/aider#4851
        return List.of(
                v("insufficientBalance402IsQuota", s, 402, h(), """
                        {"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,\
                        "code":"invalid_request_error"}}""", QUOTA_EXHAUSTED),
                v("rateLimitReachedIsRateLimited", s, 429, h(), """
                        {"error":{"message":"Rate Limit Reached","type":"rate_limit_error","param":null,\
                        "code":"rate_limit_reached"}}""", RATE_LIMITED),
                v("serverOverloaded503IsOverloaded", s, 503, h(), """
                        {"error":{"message":"Server is busy, please try again later.","type":"server_error",\
                        "param":null,"code":"server_overloaded"}}""", OVERLOADED),
                v("invalidParameters422IsRejected", s, 422, h(), """
                        {"error":{"message":"Invalid max_tokens value, the valid range of max_tokens is [1, 8192]",\
                        "type":"invalid_request_error","param":null,"code":"invalid_request_error"}}""", BAD_REQUEST),
                v("authenticationFailsIsAuthRefused", s, 401, h(), """
                        {"error":{"message":"Authentication Fails, Your api key: ****abcd is invalid",\
                        "type":"authentication_error","param":null,"code":"invalid_request_error"}}""", AUTH_REFUSED),
                v("contextLengthIsRejected", s, 400, h(), """
                        {"error":{"message":"This model's maximum context length is 65536 tokens. However, you \
                        requested 70000 tokens (62000 in the messages, 8000 in the completion). Please reduce the \
                        length of the messages or completion.","type":"invalid_request_error","param":null,\
                        "code":"invalid_request_error"}}""", BAD_REQUEST),
                v("serverErrorIsTransient", s, 500, h(), """
                        {"error":{"message":"Server Error","type":"internal_error","param":null,\
                        "code":"internal_error"}}""", TRANSIENT));
    }

    // ---- OpenRouter ------------------------------------------------------------------------

    static List<Vector> openRouter() {
        String s = "openrouter";
        String midnightMillis = String.valueOf(UTC_MIDNIGHT.toEpochMilli());
        String in42sMillis = String.valueOf(NOW.plusSeconds(42).toEpochMilli());
        return List.of(
                // openrouter.ai/docs/api-reference/limits: free-model per-day limit, X-RateLimit-Reset in
                // epoch milliseconds (body as in Gitlawb/openclaude#936)
                v("freeModelsPerDayIsQuotaUntilTheMillisReset", s, 429,
                        h("X-RateLimit-Limit", "50", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", midnightMillis),
                        """
                        {"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 \
                        free model requests per day","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"50",\
                        "X-RateLimit-Remaining":"0","X-RateLimit-Reset":"%s"}}}}""".formatted(midnightMillis),
                        QUOTA_EXHAUSTED, Duration.between(NOW, UTC_MIDNIGHT), UTC_MIDNIGHT),
                // the same limit per minute: the millisecond reset is the wait
                v("freeModelsPerMinuteWaitsForTheMillisReset", s, 429,
                        h("X-RateLimit-Limit", "20", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", in42sMillis),
                        """
                        {"error":{"message":"Rate limit exceeded: free-models-per-min. ","code":429}}""",
                        RATE_LIMITED, Duration.ofSeconds(42), null),
                // the reset only in the body's metadata.headers (what openai-java's body() keeps)
                v("resetInMetadataHeadersIsRead", s, 429, h(), """
                        {"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":\
                        {"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0",\
                        "X-RateLimit-Reset":"%s"}}}}""".formatted(in42sMillis),
                        RATE_LIMITED, Duration.ofSeconds(42), null),
                // openrouter.ai/docs/api-reference/errors: 402 insufficient credits
                v("insufficientCredits402IsQuota", s, 402, h(), """
                        {"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/credits",\
                        "code":402}}""", QUOTA_EXHAUSTED),
                // can1357/oh-my-pi#9569
                v("requiresMoreCredits402IsQuota", s, 402, h(), """
                        {"error":{"message":"This request requires more credits, or fewer max_tokens. You requested \
                        up to 65536 tokens, but can only afford 13086. To increase, visit \
                        https://openrouter.ai/settings/keys and create a key with a higher total limit","code":402}}""",
                        QUOTA_EXHAUSTED),
                // errors: 403 "Your chosen model requires moderation and your input was flagged"
                v("moderationFlagged403IsRejected", s, 403, h(), """
                        {"error":{"message":"meta-llama/llama-guard requires moderation on OpenRouter. Your input \
                        was flagged for \\"harassment\\". No credits were charged.","code":403,"metadata":{"reasons":\
                        ["harassment"],"flagged_input":"...","provider_name":"OpenAI","model_slug":\
                        "openai/gpt-4o"}}}""", BAD_REQUEST),
                // openrouter.ai/docs/api-reference/limits: a key's own credit limit, reset monthly (UTC)
                v("keyLimitExceeded403IsQuotaUntilTheMonthTurns", s, 403, h(), """
                        {"error":{"message":"Key limit exceeded (monthly limit). Manage it using \
                        https://openrouter.ai/settings/keys","code":403}}""", QUOTA_EXHAUSTED, null,
                        Instant.parse("2026-06-01T00:00:00Z")),
                // errors: 401
                v("noAuthCredentialsIsAuthRefused", s, 401, h(), """
                        {"error":{"message":"No auth credentials found","code":401}}""", AUTH_REFUSED),
                // errors: 502 "Your chosen model is down or we received an invalid response from it"
                v("providerReturnedError502IsTransient", s, 502, h(), """
                        {"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream \
                        connect error","provider_name":"Together"}}}""", TRANSIENT),
                // errors: 503 "no available model provider that meets your routing requirements"
                v("noAvailableProvider503IsOverloaded", s, 503, h(), """
                        {"error":{"message":"No allowed providers are available for the selected model.",\
                        "code":503}}""", OVERLOADED),
                // errors: mid-stream error as an SSE chunk with finish_reason "error"
                v("midStreamErrorChunkIsTransient", s, 200, h("content-type", "text/event-stream"), """
                        data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"}}]}

                        data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","provider":"OpenAI","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}

                        """, TRANSIENT),
                // errors: 408
                v("timedOut408IsTransient", s, 408, h(), """
                        {"error":{"message":"Timed out","code":408}}""", TRANSIENT),
                // errors: an upstream provider's 429 relayed in metadata.raw
                v("upstreamRateLimitedIsRateLimited", s, 429, h(), """
                        {"error":{"message":"Provider returned error","code":429,"metadata":{"raw":\
                        "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry \
                        shortly, or add your own key to accumulate your rate limits",\
                        "provider_name":"Google"}}}""", RATE_LIMITED));
    }

    // ---- Together --------------------------------------------------------------------------

    static List<Vector> together() {
        String s = "together";
        // docs.together.ai/docs/error-codes; bodies from togethercomputer/MoA#27, expectedparrot/edsl#2098
        return List.of(
                v("rateLimitedDespiteCreditLimitTypeIsRateLimited", s, 429, h(), """
                        {"error":{"message":"You have been rate limited. Your rate limit is 60 queries per minute. \
                        Please navigate to https://api.together.xyz/settings/billing to upgrade to a paid plan.",\
                        "type":"credit_limit","param":null,"code":null}}""", RATE_LIMITED),
                v("creditLimitExceeded402IsQuota", s, 402, h(), """
                        {"id":"o3LiXw4-62bZhn-96040daf687810ab","error":{"message":"Credit limit exceeded. Please \
                        navigate to https://api.together.xyz/settings/billing to add credit or upgrade your plan.",\
                        "type":"credit_limit","param":null,"code":null}}""", QUOTA_EXHAUSTED),
                // error-codes: "403 - Bad Request: Input token count + max_tokens parameter must be less than
                // the context length"
                v("contextLength403IsRejectedNotAuth", s, 403, h(), """
                        {"error":{"message":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= \
                        8193. Given: 8000 `inputs` tokens and 1024 `max_new_tokens`","type":"invalid_request_error",\
                        "param":"max_tokens","code":null}}""", BAD_REQUEST),
                v("engineOverloaded503IsOverloaded", s, 503, h(), """
                        {"error":{"message":"The server is overloaded or not ready yet.","type":"server_error",\
                        "param":null,"code":null}}""", OVERLOADED),
                v("invalidApiKeyIsAuthRefused", s, 401, h(), """
                        {"error":{"message":"Invalid API key provided. You can find your API key at \
                        https://api.together.xyz/settings/api-keys.","type":"invalid_request_error","param":null,\
                        "code":"invalid_api_key"}}""", AUTH_REFUSED),
                // xtekky/gpt4free#3032: a model-specific rate limit
                v("modelSpecificRateLimitIsRateLimited", s, 429, h(), """
                        {"error":{"message":"You have reached the rate limit specific to this model \
                        black-forest-labs/FLUX.1-kontext-pro. The maximum rate limit for this model is 9.0 queries \
                        per minute.","type":"model_rate_limit","param":null,"code":null}}""", RATE_LIMITED),
                // docs.together.ai/docs/rate-limits: x-ratelimit-reset in seconds
                v("resetSecondsHeaderIsTheWait", s, 429,
                        h("x-ratelimit-limit", "60", "x-ratelimit-remaining", "0", "x-ratelimit-reset", "2"), """
                        {"error":{"message":"You have been rate limited.","type":"credit_limit","param":null,\
                        "code":null}}""", RATE_LIMITED, Duration.ofSeconds(2), null),
                v("modelNotAvailableIsRejected", s, 404, h(), """
                        {"error":{"message":"Unable to access model xyz. Please visit https://api.together.ai/models \
                        to view the list of supported models.","type":"invalid_request_error","param":null,\
                        "code":"model_not_available"}}""", BAD_REQUEST));
    }

    // ---- Fireworks -------------------------------------------------------------------------

    static List<Vector> fireworks() {
        String s = "fireworks";
        // fireworks.ai/docs/guides/inference-error-codes
        return List.of(
                // 412 "Account is suspended"; body as in pollinations/pollinations#12136, amd/gaia#3766
                v("accountSuspendedForSpend412IsQuota", s, 412, h(), """
                        {"error":{"message":"Account acme is suspended, possibly due to reaching the monthly \
                        spending limit or failure to pay past invoices. Please go to \
                        https://fireworks.ai/account/billing for more information.","param":null,\
                        "code":"PRECONDITION_FAILED","type":"error"},"request_id":"11650e2f"}""", QUOTA_EXHAUSTED),
                // GordeyZuev/LEAP#6
                v("usageLimits429IsRateLimited", s, 429, h(), """
                        {"error":"Too Many Requests","message":"You have exceeded your usage limits. Please try \
                        again later or contact Fireworks to explore dedicated capacity."}""", RATE_LIMITED),
                v("paymentRequired402IsQuota", s, 402, h(), """
                        {"error":{"object":"error","type":"invalid_request_error","message":"Account is not on a \
                        paid plan or has exceeded usage limits."}}""", QUOTA_EXHAUSTED),
                v("modelNotFoundIsRejected", s, 404, h(), """
                        {"error":{"object":"error","type":"invalid_request_error","code":"NOT_FOUND",\
                        "message":"Model not found, inaccessible, and/or not deployed"}}""", BAD_REQUEST),
                v("invalidApiKeyIsAuthRefused", s, 401, h(), """
                        {"error":{"object":"error","type":"invalid_request_error","message":"The API key you \
                        provided is invalid."}}""", AUTH_REFUSED),
                v("serviceUnavailableIsOverloaded", s, 503, h(), """
                        {"error":{"object":"error","type":"internal_server_error","message":"Service \
                        unavailable"}}""", OVERLOADED),
                v("internalErrorIsTransient", s, 500, h(), """
                        {"error":{"object":"error","type":"internal_server_error","message":"Internal server \
                        error"}}""", TRANSIENT));
    }

    // ---- xAI -------------------------------------------------------------------------------

    static List<Vector> xai() {
        String s = "xai";
        // docs.x.ai/docs/key-information/debugging; bodies {"code": <gRPC text>, "error": <message>}
        String spend = "Your team 16f2151a-40f4-4a80-8ad0-cae00c27e8dd has either used all available credits or "
                + "reached its monthly spending limit. To continue making API requests, please purchase more credits "
                + "or raise your spending limit.";
        return List.of(
                // continuedev/continue#10373
                v("spendingLimit429IsQuota", s, 429, h(), """
                        {"code":"Some resource has been exhausted","error":"%s"}""".formatted(spend), QUOTA_EXHAUSTED),
                // Anantys-oss/koan#2412
                v("spendingLimit403IsQuotaNotAuth", s, 403, h(), """
                        {"code":"The caller does not have permission to execute the specified operation",\
                        "error":"%s"}""".formatted(spend), QUOTA_EXHAUSTED),
                // Wei-Shaw/sub2api#4069
                v("runOutOfCredits403IsQuota", s, 403, h(), """
                        {"code":"The caller does not have permission to execute the specified operation","error":\
                        "You have run out of credits or need a Grok subscription. Add credits at \
                        https://grok.com/?_s=usage or upgrade at https://grok.com/supergrok."}""", QUOTA_EXHAUSTED),
                // debugging: "400 Bad Request ... An incorrect API key is supplied"
                v("incorrectApiKey400IsAuthRefused", s, 400, h(), """
                        {"code":"Client specified an invalid argument","error":"Incorrect API key provided: \
                        xa***gw. You can obtain an API key from https://console.x.ai."}""", AUTH_REFUSED),
                v("rateLimit429IsRateLimited", s, 429, h(), """
                        {"code":"Some resource has been exhausted","error":"Too many requests: rate limit \
                        exceeded for grok-4. Please retry after some time."}""", RATE_LIMITED),
                v("modelNotFoundIsRejected", s, 404, h(), """
                        {"code":"Some requested entity was not found","error":"The model grok-9 does not exist or \
                        your team does not have access to it."}""", BAD_REQUEST),
                // debugging: "403 Forbidden ... Your API key/team is blocked"
                v("teamBlocked403IsAuthRefused", s, 403, h(), """
                        {"code":"The caller does not have permission to execute the specified operation",\
                        "error":"Your team is blocked. Please contact support."}""", AUTH_REFUSED),
                v("promptTooLongIsRejected", s, 400, h(), """
                        {"code":"Client specified an invalid argument","error":"This model's maximum prompt length \
                        is 131072 but the request contains 135000 tokens."}""", BAD_REQUEST),
                v("unavailable503IsOverloaded", s, 503, h(), """
                        {"code":"The service is currently unavailable","error":"Service temporarily \
                        unavailable"}""", OVERLOADED));
    }

    // ---- vLLM ------------------------------------------------------------------------------

    static List<Vector> vllm() {
        String s = "vllm";
        // vllm-project/vllm#12886 (the error shape), entrypoints/openai/protocol.py ErrorResponse
        return List.of(
                v("contextLengthIsRejected", s, 400, h("server", "uvicorn"), """
                        {"object":"error","message":"This model's maximum context length is 2048 tokens. However, \
                        you requested 2723 tokens (1699 in the messages, 1024 in the completion). Please reduce the \
                        length of the messages or completion.","type":"BadRequestError","param":null,"code":400}""",
                        BAD_REQUEST),
                v("modelDoesNotExistIsRejected", s, 404, h(), """
                        {"object":"error","message":"The model `foo` does not exist.","type":"NotFoundError",\
                        "param":null,"code":404}""", BAD_REQUEST),
                v("internalServerErrorIsTransient", s, 500, h(), """
                        {"object":"error","message":"EngineCore encountered an issue. See stack trace for the root \
                        cause.","type":"InternalServerError","param":null,"code":500}""", TRANSIENT),
                // newer vLLM: {"error":{...}} with the same fields
                v("newerShapeBadRequestIsRejected", s, 400, h(), """
                        {"error":{"message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and \
                        --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}""",
                        BAD_REQUEST),
                // api_server.py's --api-key middleware
                v("unauthorizedIsAuthRefused", s, 401, h(), """
                        {"error":"Unauthorized"}""", AUTH_REFUSED),
                // an error inside a 200 stream carries its own code
                v("errorChunkInside200StreamIsReadByItsCode", s, 200, h("content-type", "text/event-stream"), """
                        data: {"error":{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}}

                        """, BAD_REQUEST),
                v("serviceUnavailableIsOverloaded", s, 503, h(), """
                        {"object":"error","message":"The server is not ready: the engine is still loading.",\
                        "type":"ServiceUnavailableError","param":null,"code":503}""", OVERLOADED));
    }

    // ---- Ollama ----------------------------------------------------------------------------

    static List<Vector> ollama() {
        String s = "ollama";
        // github.com/ollama/ollama openai/openai.go NewError: 400 invalid_request_error, 404 not_found_error,
        // anything else api_error
        return List.of(
                v("modelNotFoundIsRejected", s, 404, h(), """
                        {"error":{"message":"model \\"llama3.2\\" not found, try pulling it first",\
                        "type":"not_found_error","param":null,"code":null}}""", BAD_REQUEST),
                // OLLAMA_MAX_QUEUE: "server busy, please try again.  maximum pending requests exceeded"
                v("serverBusy503IsOverloaded", s, 503, h(), """
                        {"error":{"message":"server busy, please try again.  maximum pending requests exceeded",\
                        "type":"api_error","param":null,"code":null}}""", OVERLOADED),
                v("runnerTerminated500IsTransient", s, 500, h(), """
                        {"error":{"message":"llama runner process has terminated: exit status 2",\
                        "type":"api_error","param":null,"code":null}}""", TRANSIENT),
                v("invalidMessageFormatIsRejected", s, 400, h(), """
                        {"error":{"message":"invalid message format","type":"invalid_request_error","param":null,\
                        "code":null}}""", BAD_REQUEST),
                // the native API's {"error": "..."}
                v("nativeModelNotFoundIsRejected", s, 404, h(), """
                        {"error":"model 'llama3' not found, try pulling it first"}""", BAD_REQUEST),
                // a 413 typed api_error (anything but 400 and 404 is api_error) is still never retried
                v("bodyTooLarge413TypedApiErrorIsRejected", s, 413, h(), """
                        {"error":{"message":"http: request body too large","type":"api_error","param":null,\
                        "code":null}}""", BAD_REQUEST),
                // the native API's answer when OLLAMA_MAX_QUEUE is full
                v("nativeServerBusy503IsOverloaded", s, 503, h(), """
                        {"error":"server busy, please try again.  maximum pending requests exceeded"}""",
                        OVERLOADED));
    }

    // ---- gateways, proxies and reset headers in other forms ---------------------------------

    static List<Vector> gateways() {
        String s = "gateway";
        String rl = """
                {"error":{"message":"Rate limit exceeded","type":"requests","code":"rate_limit_exceeded"}}""";
        return List.of(
                // Cloudflare 52x: origin unreachable or timed out
                v("cloudflare522IsTransient", s, 522, h("server", "cloudflare"), """
                        <html><head><title>api.example.com | 522: Connection timed out</title></head></html>""",
                        TRANSIENT),
                v("cloudflare524IsTransient", s, 524, h("server", "cloudflare"), """
                        <html><head><title>api.example.com | 524: A timeout occurred</title></head></html>""",
                        TRANSIENT),
                v("cloudflare520IsTransient", s, 520, h("server", "cloudflare"), null, TRANSIENT),
                // nginx 499 client closed request
                v("nginx499IsTransient", s, 499, h("server", "nginx"), null, TRANSIENT),
                // IETF draft RateLimit-Reset, delta seconds
                v("ietfRateLimitResetSeconds", s, 429, h("RateLimit-Limit", "100", "RateLimit-Remaining", "0",
                        "RateLimit-Reset", "30"), rl, RATE_LIMITED, Duration.ofSeconds(30), null),
                // the structured RateLimit header
                v("ietfStructuredRateLimitHeader", s, 429, h("RateLimit", "limit=100, remaining=0, reset=50"), rl,
                        RATE_LIMITED, Duration.ofSeconds(50), null),
                // x-ratelimit-reset in epoch seconds
                v("xRateLimitResetEpochSeconds", s, 429, h("x-ratelimit-remaining", "0", "x-ratelimit-reset",
                        String.valueOf(NOW_EPOCH + 42)), rl, RATE_LIMITED, Duration.ofSeconds(42), null),
                // x-ratelimit-reset-requests written as epoch seconds instead of OpenAI's duration
                v("resetRequestsInEpochSecondsIsNotThirtyYears", s, 429, h("x-ratelimit-remaining-requests", "0",
                        "x-ratelimit-reset-requests", String.valueOf(NOW_EPOCH + 20)), rl, RATE_LIMITED,
                        Duration.ofSeconds(20), null),
                // a gateway writing an epoch time into Retry-After: not a wait of 56 years
                v("retryAfterInEpochSecondsIsReadByItsMagnitude", s, 429, h("retry-after",
                        String.valueOf(NOW_EPOCH + 42)), rl, RATE_LIMITED, Duration.ofSeconds(42), null),
                // x-ratelimit-reset as an RFC 3339 time
                v("xRateLimitResetRfc3339", s, 429, h("x-ratelimit-remaining", "0", "x-ratelimit-reset",
                        "2026-05-28T10:16:00Z"), rl, RATE_LIMITED, Duration.ofSeconds(30), null),
                // x-ratelimit-reset as a duration
                v("xRateLimitResetDuration", s, 429, h("x-ratelimit-remaining", "0", "x-ratelimit-reset", "1m30s"),
                        rl, RATE_LIMITED, Duration.ofSeconds(90), null),
                // a reset whose limit still has room is not the wait
                v("resetOfALimitWithRoomIsNotTheWait", s, 429, h("x-ratelimit-remaining", "12", "x-ratelimit-reset",
                        String.valueOf(NOW_EPOCH + 600)), rl, RATE_LIMITED, null, null));
    }

    // ---- helpers ---------------------------------------------------------------------------

    static Vector v(String name, String server, int status, Map<String, List<String>> headers, String body,
            FailureClass expected) {
        return new Vector(name, server, status, headers, body, expected, null, null);
    }

    static Vector v(String name, String server, int status, Map<String, List<String>> headers, String body,
            FailureClass expected, Duration retryAfter, Instant resetAt) {
        return new Vector(name, server, status, headers, body, expected, retryAfter, resetAt);
    }

    static Map<String, List<String>> h(String... pairs) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            m.computeIfAbsent(pairs[i], k -> new ArrayList<>()).add(pairs[i + 1]);
        }
        return m;
    }
}
