package dev.layover.core.provider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.testing.PureTest;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.net.SocketTimeoutException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The classifier must work for a user who has none of the provider SDKs on the classpath. */
@PureTest
class WithoutSdksTest {

    private static final List<String> SDK_PACKAGES =
            List.of("com.openai.", "com.anthropic.", "com.google.genai.", "software.amazon.");

    /** Layover core and Jackson only, over the JDK's platform loader: no SDK is visible. */
    private static URLClassLoader coreWithoutSdks() throws Exception {
        URL[] urls = {
            location(ProviderClassifier.class), location(ObjectMapper.class), location(JsonFactory.class),
            location(JsonInclude.class)
        };
        return new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
    }

    private static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    @Test
    void jdkTimeoutIsClassifiedWhenNoSdkIsOnTheClasspath() throws Exception {
        try (URLClassLoader loader = coreWithoutSdks()) {
            for (String sdkClass : List.of("com.openai.errors.OpenAIException", "com.anthropic.errors.AnthropicException",
                    "com.google.genai.errors.ApiException",
                    "software.amazon.awssdk.core.exception.SdkException")) {
                assertThrows(ClassNotFoundException.class, () -> loader.loadClass(sdkClass), sdkClass);
            }
            Class<?> type = loader.loadClass(ProviderClassifier.class.getName());
            assertTrue(type != ProviderClassifier.class, "loaded in isolation");
            Object classifier = type.getMethod("create").invoke(null);

            Optional<?> c = (Optional<?>) type.getMethod("classify", Throwable.class)
                    .invoke(classifier, new SocketTimeoutException("Read timed out"));
            assertTrue(c.isPresent());
            Object failureClass = c.get().getClass().getMethod("failureClass").invoke(c.get());
            assertEquals("TRANSIENT", ((Enum<?>) failureClass).name());

            Optional<?> bug = (Optional<?>) type.getMethod("classify", Throwable.class)
                    .invoke(classifier, new IllegalStateException("a bug of the job's own"));
            assertFalse(bug.isPresent());

            @SuppressWarnings({"unchecked", "rawtypes"})
            Object openAi = Enum.valueOf((Class) loader.loadClass(Provider.class.getName()), "OPENAI");
            Object http = ((Optional<?>) type.getMethod("classify", openAi.getClass(), int.class, Map.class, String.class)
                    .invoke(classifier, openAi, 429, Map.of("retry-after", List.of("3")),
                            "{\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}"))
                    .orElseThrow();
            assertEquals("QUOTA_EXHAUSTED", ((Enum<?>) http.getClass().getMethod("failureClass").invoke(http)).name());

            Optional<?> timeout = (Optional<?>) type.getMethod("classifyNoResponse", openAi.getClass(), Throwable.class)
                    .invoke(classifier, openAi, new java.util.concurrent.TimeoutException("deadline"));
            assertEquals("TRANSIENT", ((Enum<?>) timeout.orElseThrow().getClass().getMethod("failureClass")
                    .invoke(timeout.get())).name());
        }
    }

    @Test
    void noSdkTypeAppearsInThePublicApiOrFields() {
        for (Class<?> c : List.of(ProviderClassifier.class, ProviderClassifier.Builder.class, Classification.class,
                FailureClass.class, Provider.class, HeaderMap.class, ErrorDetails.class, ErrorBodyParser.class,
                Rules.class, RetryAfter.class, Waits.class, Pace.class, TokenLimits.class, TokenDimension.class,
                WaitReading.class, RateLimitHeaders.class, RateLimitHeaders.Window.class, ProviderRules.class,
                Row.class, Row.Facts.class, Row.Match.class, Row.Detect.class, Row.Wait.class)) {
            for (Field f : c.getDeclaredFields()) {
                assertNotSdk(f.getGenericType().getTypeName(), c + "." + f.getName());
            }
            for (Method m : c.getDeclaredMethods()) {
                assertNotSdk(m.getGenericReturnType().getTypeName(), c + "." + m.getName());
                for (Parameter p : m.getParameters()) {
                    assertNotSdk(p.getParameterizedType().getTypeName(), c + "." + m.getName());
                }
            }
        }
    }

    private static void assertNotSdk(String typeName, String where) {
        for (String sdk : SDK_PACKAGES) {
            assertFalse(typeName.contains(sdk), where + " uses " + typeName);
        }
    }
}
