package dev.layover.spring.boot;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns a refused {@code layover.*} property into Spring Boot's "APPLICATION FAILED TO START" report. */
class LayoverFailureAnalyzer extends AbstractFailureAnalyzer<InvalidLayoverPropertyException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, InvalidLayoverPropertyException cause) {
        String action = cause.action() != null ? cause.action()
                : "Change " + cause.property() + " in the application's configuration (application.properties, "
                        + "application.yml or the environment).";
        return new FailureAnalysis("Layover refused the property " + cause.getMessage(), action, cause);
    }
}
