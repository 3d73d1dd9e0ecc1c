package dev.layover.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import static dev.layover.architecture.ReactorSources.reactorRoot;
import static dev.layover.architecture.ReactorSources.read;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import dev.layover.testing.PureTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The boundaries between Layover's modules and packages, enforced over the compiled main classes
 * (docs/architecture.md draws them):
 *
 * <ul>
 *   <li>{@code dev.layover.core.internal..} is core's alone: no other module reaches it, in main or
 *       test sources; core's API hands out none of its types; and a class there is public only
 *       when another package of core uses it (docs/decisions/0007);
 *   <li>{@code dev.layover.core.spi} is for Layover's own modules (dead letters, console) only;
 *   <li>core's internal packages depend on each other one way (engine → gate → jobs → db), without
 *       cycles; core's public subpackages have no cycles among themselves either;
 *   <li>modules depend one way: console → dead letters → core.
 * </ul>
 */
@PureTest
class BoundariesTest {

    private static final Pattern INTERNAL_IMPORT = Pattern.compile("(?m)^import (static )?dev\\.layover\\.core\\.internal\\.");

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.layover");
    }

    @Test
    void nothingOutsideCoreReachesCoresInternals() {
        noClasses().that().resideOutsideOfPackage("dev.layover.core..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.internal..")
                .because("what dlq and the console need from core goes through dev.layover.core.spi")
                .check(classes);
    }

    /** Read from the sources, so it covers every module, the Spring Boot ones and the tests too. */
    @Test
    void noSourceOutsideCoreImportsCoresInternals() throws IOException {
        Path root = reactorRoot();
        List<String> reaching = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !root.relativize(p).startsWith("core"))
                    .filter(p -> !root.relativize(p).toString().contains("/target/"))
                    .filter(p -> INTERNAL_IMPORT.matcher(read(p)).find())
                    .forEach(p -> reaching.add(root.relativize(p).toString()));
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        assertEquals(List.of(), reaching, "what other modules need from core goes through dev.layover.core.spi");
    }

    @Test
    void coresApiHandsOutNoInternalTypes() {
        codeUnits().that().arePublic()
                .and().areDeclaredInClassesThat().arePublic()
                .and().areDeclaredInClassesThat().resideInAPackage("dev.layover.core..")
                .and().areDeclaredInClassesThat().resideOutsideOfPackage("dev.layover.core.internal..")
                .should(new ArchCondition<JavaCodeUnit>("name no type of dev.layover.core.internal in their signature") {
                    @Override
                    public void check(JavaCodeUnit unit, ConditionEvents events) {
                        Stream.concat(Stream.of(unit.getRawReturnType()), unit.getRawParameterTypes().stream())
                                .filter(t -> t.getPackageName().startsWith("dev.layover.core.internal"))
                                .forEach(t -> events.add(SimpleConditionEvent.violated(unit,
                                        unit.getFullName() + " names " + t.getName())));
                    }
                })
                .because("an application never needs an internal type to call Layover")
                .check(classes);
    }

    /**
     * A top-level class of core's internals is public only when a class of another package of core
     * uses it: otherwise it is package-private, out of an application's reach.
     */
    @Test
    void aPublicInternalClassIsUsedFromAnotherPackage() {
        classes().that().resideInAPackage("dev.layover.core.internal..")
                .and().areTopLevelClasses()
                .and().haveModifier(JavaModifier.PUBLIC)
                .should(new ArchCondition<JavaClass>("be used from another package of core") {
                    @Override
                    public void check(JavaClass c, ConditionEvents events) {
                        boolean used = classes.stream() // a use of a nested class counts: it names the class
                                .filter(x -> x.equals(c) || x.getName().startsWith(c.getName() + "$"))
                                .flatMap(x -> x.getDirectDependenciesToSelf().stream())
                                .anyMatch(d -> !d.getOriginClass().getPackageName().equals(c.getPackageName()));
                        if (!used) {
                            events.add(SimpleConditionEvent.violated(c, c.getName()
                                    + " is public but only its own package uses it: make it package-private"));
                        }
                    }
                })
                .check(classes);
    }

    @Test
    void theSpiIsForLayoversOwnModulesOnly() {
        noClasses().that().resideOutsideOfPackages("dev.layover.core..", "dev.layover.dlq..", "dev.layover.console..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.spi..")
                .because("applications use core's API; the SPI may change with any release")
                .check(classes);
    }

    @Test
    void coresInternalPackagesHaveNoCycles() {
        slices().matching("dev.layover.core.internal.(*)..").should().beFreeOfCycles().check(classes);
    }

    @Test
    void coresInternalPackagesDependOneWay() {
        noClasses().that().resideInAnyPackage("dev.layover.core.internal.jobs..", "dev.layover.core.internal.db..",
                        "dev.layover.core.internal.time..", "dev.layover.core.internal.observe..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.core.internal.engine..",
                        "dev.layover.core.internal.gate..")
                .because("the job store, the database and observability are below the engine and the gate")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.core.internal.gate..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.core.internal.engine..")
                .because("the engine asks the gate, never the other way round")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.core.internal.batch..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.core.internal.engine..",
                        "dev.layover.core.internal.gate..")
                .because("the engine routes jobs to batches; the batch store and loop know neither the engine nor the gate")
                .check(classes);
    }

    @Test
    void thePublicSubpackagesHaveNoCyclesAmongThemselves() {
        slices().matching("dev.layover.core.(**)")
                .should().beFreeOfCycles()
                .check(classes.that(JavaClass.Predicates.resideInAPackage("dev.layover.core.*..")
                        .and(JavaClass.Predicates.resideOutsideOfPackage("dev.layover.core.internal.."))));
    }

    @Test
    void theDeadLetterStoreAndTheConsoleDependOnCoreOneWay() {
        noClasses().that().resideInAPackage("dev.layover.core..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.layover.dlq..", "dev.layover.console..")
                .check(classes);
        noClasses().that().resideInAPackage("dev.layover.dlq..")
                .should().dependOnClassesThat().resideInAPackage("dev.layover.console..")
                .check(classes);
    }
}
