package dev.layover.core.provider;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.http.SdkHttpResponse;

/**
 * Reads AWS SDK v2 exceptions: {@code software.amazon.awssdk.services.bedrockruntime.model.*}
 * (ThrottlingException, ServiceQuotaExceededException, ModelNotReadyException, ...) and
 * {@code software.amazon.awssdk.core.exception.*}. An {@code AwsServiceException} carries the
 * status ({@code statusCode()}), the error type and message ({@code awsErrorDetails().errorCode()},
 * {@code errorMessage()}, read from {@code x-amzn-ErrorType} and the JSON body) and the response
 * headers ({@code awsErrorDetails().sdkHttpResponse()}, so {@code Retry-After} and
 * {@code x-amz-retry-after}); the raw body holds nothing more for Bedrock's {@code {"message"}}
 * errors. Client-side failures other than timeouts are left to the cause chain (a refused
 * connection is an {@code IOException} underneath). Only loaded after
 * {@link ProviderClassifier.SdkFamily} has seen a {@code software.amazon.awssdk} class.
 */
final class BedrockSdkAdapter {

    private BedrockSdkAdapter() {}

    static Optional<Classification> classify(Throwable t, ProviderClassifier classifier, Provider hint) {
        Provider provider = hint != null ? hint : Provider.BEDROCK;
        if (t instanceof AwsServiceException e) {
            AwsErrorDetails details = e.awsErrorDetails();
            String code = details == null ? null : details.errorCode();
            String message = details == null ? null : details.errorMessage();
            if (message == null) {
                message = e.getMessage();
            }
            if (code == null) {
                code = simpleName(e);
            }
            SdkHttpResponse http = details == null ? null : details.sdkHttpResponse();
            Map<String, List<String>> headers = http == null ? null : http.headers();
            return Optional.of(classifier.classifyDetails(provider, e.statusCode(), HeaderMap.of(headers),
                    ErrorDetails.of(code, null, message)));
        }
        if (t instanceof SdkServiceException e) {
            return Optional.of(classifier.classifyDetails(provider, e.statusCode(), HeaderMap.EMPTY,
                    ErrorDetails.of(simpleName(e), null, e.getMessage())));
        }
        if (t instanceof ApiCallTimeoutException || t instanceof ApiCallAttemptTimeoutException) {
            return Optional.of(classifier.transientFailure(provider, t));
        }
        return Optional.empty();
    }

    /** The modeled exception's name, e.g. ThrottlingException, when the error details are missing. */
    private static String simpleName(Throwable e) {
        String name = e.getClass().getSimpleName();
        return name.endsWith("Exception") && !name.equals("BedrockRuntimeException")
                && !name.equals("AwsServiceException") && !name.equals("SdkServiceException") ? name : null;
    }
}
