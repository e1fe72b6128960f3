plugins {
    id("com.android.application")
}

val litertVersion: String by project

android {
    namespace = "org.albertedge.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "org.albertedge.demo"
        minSdk = 24
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"
        testInstrumentationRunner = "androidx.test.runner.AndroidJUnitRunner"
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_1_8
        targetCompatibility = JavaVersion.VERSION_1_8
    }

    // Stored, not deflated: the interpreter memory-maps the model straight out of the APK, and
    // AssetManager.openFd only works on uncompressed assets.
    androidResources {
        noCompress += "tflite"
    }
}

dependencies {
    implementation(project(":albert-core"))
    implementation("com.google.ai.edge.litert:litert:$litertVersion")

    androidTestImplementation("androidx.test:runner:1.6.2")
    androidTestImplementation("androidx.test:core:1.6.1")
    androidTestImplementation("androidx.test.ext:junit:1.2.1")
}
