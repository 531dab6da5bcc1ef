# Stage: model. The point-to-point stage model of bcast and reduce (study eq. 2-4, 8-11), one interface
# per mode (src/collat/model/): `paper` (the collective study's model), `openmpi` (what OpenMPI 4.1.5
# ran, priced from the measurements), `calibrated` (the same shapes, costs fitted by model_calibrate)
# and `hybrid` (the calibrated grid corrected by its residuals and, beyond the measured P, averaged
# with the regression stage's segmented fit), predicted on every P and size from the
# pt2pt and nbft stages' outputs, scored in sample (model_predict) and out of sample (model_validate).
# The modes fitted on no collective measurement are priced first (model_predict_unfitted): the
# validation needs them alone, so it starts beside the calibration instead of after it. The
# validation runs one job per target (model_validate), joined by model_validation. Two knobs of
# the fitted modes are chosen on inner folds of all the data: how far the calibration carries to an
# algorithm nobody measured (model_transfer) and how much of the model's bend between measured P
# the hybrid keeps (model_bend).


rule model_calibrate:
    input:
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
    output:
        calibration=report(
            "results/model/calibration.csv",
            category="6. Point-to-point model",
            caption="../report/calibration.rst",
        ),
    params:
        config={key: config[key] for key in ("machine", "channels", "model")},
    # one worker: its four fits on two workers took 4.4 s against 6.6 s on one, and a job of two
    # workers waits for both cores to be free (in a cold run on 2 cores it waited for the whole
    # validation, 30 s); on SLURM the profile sets 4 (set-threads)
    threads: 1
    priority: 10  # on the way to the predictions, the selection and the figures
    log:
        "logs/model/calibrate.log",
    benchmark:
        "benchmarks/rules/model/calibrate.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_calibrate.py"


rule model_transfer:
    input:
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
        unfitted="results/model/unfitted_predictions.parquet",
    output:
        transfer="results/model/transfer.csv",
    params:
        config={key: config[key] for key in ("machine", "channels", "model")},
    # one worker: it runs beside the validation, which the predictions wait for anyway
    threads: 1
    log:
        "logs/model/transfer.log",
    benchmark:
        "benchmarks/rules/model/transfer.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_transfer.py"


rule model_bend:
    input:
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
    output:
        bend="results/model/bend.csv",
    params:
        config={key: config[key] for key in ("machine", "channels", "model")},
    # one worker: it runs beside the validation, which the predictions wait for anyway
    threads: 1
    log:
        "logs/model/bend.log",
    benchmark:
        "benchmarks/rules/model/bend.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_bend.py"


rule model_predict_unfitted:
    input:
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        hockney_study="results/pt2pt/hockney_study.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
    output:
        predictions="results/model/unfitted_predictions.parquet",
    params:
        config={key: config[key] for key in ("machine", "channels", "mappings", "algorithms", "model")},
        forced_check=config["quality"]["forced_check"],  # forced runs that measure as one algorithm stop here
        placement_check=config["quality"]["placement_check"],  # mappings that measure as one placement too
        facts_version=FACTS_VERSION,  # runs the logs say another MPI made stop here
        raw_dir=RAW["dir"],  # where a raw log the check names lies
    # one worker: two took as long on 2 cores (5.6 s against 5.9 s), and with two it waited for both
    # cores to be free, 19 s of the longest path in a cold run; on SLURM the profile sets 4 (set-threads)
    threads: 1
    priority: 10  # on the way to the model's validation (the longest path)
    log:
        "logs/model/predict_unfitted.log",
    benchmark:
        "benchmarks/rules/model/predict_unfitted.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_predict_unfitted.py"


rule model_predict:
    input:
        unpack(calibration_input),
        unpack(transfer_input),
        unpack(hybrid_input),
        unpack(bend_input),  # how much of the model's bend between measured P the hybrid keeps
        unpack(fanout_shape_input),  # the measured fan-outs' shape (model.calibrated.nbft_shape)
        collective="results/tidy/collective.parquet",
        unfitted="results/model/unfitted_predictions.parquet",
        hockney="results/pt2pt/hockney.parquet",  # the eager limit the measurements show
        nbft_fits="results/nbft/fits.csv",  # the small-message limit they show, and the fan-outs' shape
        intervals="results/model/intervals.csv",  # the fitted modes' interval widths, from the validation
        noise_floor="results/model/noise_floor.csv",  # how far two jobs' runs of one configuration lie apart
    output:
        predictions="results/model/predictions.parquet",
        scores=report(
            "results/model/scores.csv",
            category="6. Point-to-point model",
            caption="../report/model_scores.rst",
        ),
    params:
        config={key: config[key] for key in ("machine", "channels", "mappings", "algorithms", "model")},
        paper_cleaning=config["paper"]["cleaning"],
    # one worker: its serial part (the hybrid, the scores, the table) is most of it, and one core lets
    # another job run beside it (cold runs on 2 cores, three alternated pairs: 115 s against 122 s with
    # 4 workers); on SLURM the profile sets 4 (set-threads)
    threads: 1
    priority: 10  # on the way to the selection and the figures
    log:
        "logs/model/predict.log",
    benchmark:
        "benchmarks/rules/model/predict.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_predict.py"


rule model_what_if:
    input:
        unpack(calibration_input),
        unpack(transfer_input),
        unpack(hybrid_input),  # the trend; the measured machine's calibrated grid is priced again
        unpack(bend_input),  # how much of the measured machine's bend between measured P the hybrid keeps
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        hockney_study="results/pt2pt/hockney_study.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
    output:
        "results/model/what_if/{name}.parquet",
    params:
        config={key: config[key] for key in ("machine", "channels", "mappings", "algorithms", "model")},
        index=lambda w: WHAT_IF[w.name],
    threads: 1
    priority: 1  # off the longest path: nothing reads it
    log:
        "logs/model/what_if_{name}.log",
    benchmark:
        "benchmarks/rules/model/what_if_{name}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_what_if.py"


rule model_validate:
    input:
        unpack(calibration_start_input),
        collective="results/tidy/collective.parquet",
        unfitted="results/model/unfitted_predictions.parquet",
        hockney="results/pt2pt/hockney.parquet",  # the eager limit, and the calibration's start
        nbft_fits="results/nbft/fits.csv",  # the eager and small-message limits the fan-ins show
    output:
        scores="results/model/validation/{target}.csv",
        predictions="results/model/validation/{target}.parquet",
    params:
        machine=config["machine"],
        forms=config["regression"]["forms"],
        options=config["validation"],
        outliers=config["quality"]["outliers"],  # the training part's flags, set on its own rows
        config={key: config[key] for key in ("machine", "channels", "model")},
    # one job per target and one worker each: two jobs of one core pack beside the other rules,
    # where one job of two workers (1.5x faster) waited for both cores to be free; on SLURM the
    # profile sets 4 (set-threads)
    threads: 1
    priority: 10  # the longest path: the validation, its figure, the selection and the summary
    log:
        "logs/model/validate_{target}.log",
    benchmark:
        "benchmarks/rules/model/validate_{target}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_validate.py"


rule model_noise_floor:
    input:
        collective="results/tidy/collective.parquet",
    output:
        report(
            "results/model/noise_floor.csv",
            category="6. Point-to-point model",
            caption="../report/noise_floor.rst",
        ),
    params:
        machine=config["machine"],
        targets=config["validation"]["targets"],
        default_rules=config["model"]["openmpi"]["default_rules"],
        trees=config["model"]["openmpi"]["trees"],
    log:
        "logs/model/noise_floor.log",
    benchmark:
        "benchmarks/rules/model/noise_floor.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_noise_floor.py"


rule model_segments:
    input:
        unpack(calibration_input),
        collective="results/tidy/collective.parquet",
        hockney="results/pt2pt/hockney.parquet",
        hockney_study="results/pt2pt/hockney_study.parquet",
        nbft_fits="results/nbft/fits.csv",
        nbft_medians="results/nbft/medians.parquet",
    output:
        segments="results/model/segments.parquet",
    params:
        config={key: config[key] for key in ("machine", "channels", "mappings", "algorithms", "model")},
    threads: 1
    log:
        "logs/model/segments.log",
    benchmark:
        "benchmarks/rules/model/segments.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_segments.py"


rule model_validation:
    input:
        scores=expand("results/model/validation/{target}.csv", target=config["validation"]["targets"]),
        predictions=expand("results/model/validation/{target}.parquet", target=config["validation"]["targets"]),
    output:
        scores=report(
            "results/model/validation.csv",
            category="6. Point-to-point model",
            caption="../report/validation.rst",
        ),
        predictions="results/model/validation_predictions.parquet",
        intervals="results/model/intervals.csv",
        default_runs="results/model/default_runs.csv",
    params:
        default_rules=config["model"]["openmpi"]["default_rules"],  # what the default runs at each held-out point
    priority: 10  # the longest path
    log:
        "logs/model/validation.log",
    benchmark:
        "benchmarks/rules/model/validation.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/model_validation.py"
