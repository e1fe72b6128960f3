// Plain Java library (no Android imports): tokenizers, model-pack reader, and the task logic
// (classification, NER, QA, embeddings) behind InferenceEngine, the one interface an app implements
// to run the model. Java 8 language level so the app can use it on every supported Android release.
//
// Published as org.albertedge:albert-core: `./gradlew :albert-core:publishToMavenLocal` (~/.m2), or
// `./gradlew :albert-core:publish` into build/m2 (a file repository another build can point at).
// ci-check.sh lays out the same coordinates without Gradle and compiles a consumer against them.
plugins {
    `java-library`
    `maven-publish`
}

group = "org.albertedge"
version = "0.1.0"

java {
    withSourcesJar()
    withJavadocJar()
}

tasks.withType<JavaCompile>().configureEach {
    // --release 8 checks the API too, not just the bytecode level (same flag as ci-check.sh).
    options.release.set(8)
    options.encoding = "UTF-8"
}

tasks.jar {
    manifest {
        attributes("Automatic-Module-Name" to "org.albertedge.core")
    }
}

tasks.withType<Javadoc>().configureEach {
    (options as StandardJavadocDocletOptions).addStringOption("Xdoclint:none", "-quiet")
}

dependencies {
    // org.json is part of the Android platform; on the JVM, this artifact is the same implementation.
    // compileOnly, so it is not in the POM: a JVM consumer adds it (or any org.json with the same API).
    compileOnly("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation(platform("org.junit:junit-bom:5.10.3"))
    testImplementation("org.junit.jupiter:junit-jupiter")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher")
}

tasks.test {
    useJUnitPlatform()
}

publishing {
    publications {
        create<MavenPublication>("albertCore") {
            from(components["java"])
            artifactId = "albert-core"
            pom {
                name.set("albert-core")
                description.set("albert-edge's Java core: WordPiece and SentencePiece tokenizers with offsets, the " +
                    "model-pack reader, and classification, NER, QA and embeddings behind an InferenceEngine")
                licenses {
                    license {
                        name.set("Apache-2.0")
                        url.set("https://www.apache.org/licenses/LICENSE-2.0")
                    }
                }
            }
        }
    }
    repositories {
        maven {
            name = "build"
            url = uri(layout.buildDirectory.dir("m2"))
        }
    }
}
