"""Give a trained classifier a reject rule whose risk is guaranteed with high probability.

Run: python examples/guaranteed_reject_rule.py
(needs scikit-learn: pip install 'abstain[sklearn]')
"""

from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from abstain import BoundedImprovement
from abstain.metrics import aurc
from abstain.scores import conditional_risk

X, y = load_digits(return_X_y=True)
X_train, X_rest, y_train, y_rest = train_test_split(X / 16, y, test_size=0.6, random_state=0)
X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)
model = LogisticRegression(max_iter=3000).fit(X_train, y_train)


def predict_and_score(X_part, y_part):
    """Plug-in prediction, its uncertainty (1 - max probability) and its 0/1 loss."""
    pred, uncertainty = conditional_risk(model.predict_proba(X_part))
    return uncertainty, (model.classes_[pred] != y_part).astype(float)


u_cal, loss_cal = predict_and_score(X_cal, y_cal)
u_test, loss_test = predict_and_score(X_test, y_test)

# Selective risk <= 2% with probability >= 95% over the draw of the calibration set.
rule = BoundedImprovement(target_risk=0.02, delta=0.05).fit(u_cal, loss_cal)
accept = rule.accept(u_test)
print(f"error without rejection: {loss_test.mean():.4f}   "
      f"AuRC of the score: {aurc(loss_test, u_test):.4f}")
print(f"calibration: coverage {rule.coverage_:.3f}, risk {rule.risk_:.4f}, "
      f"certified risk bound {rule.risk_bound_:.4f}")
print(f"test:        coverage {accept.mean():.3f}, risk {loss_test[accept].mean():.4f}")
