/* global document */
// The account's credentials, write-only: lists the names (never values) of the account-wide set and of the
// user the console submits as, stores one (name + value, for the account or for that user) and deletes one,
// through the management plane (`/v1/admin/accounts/{account}/credentials` and `.../users/{user}/credentials`).
// The value typed is sent once and the box is cleared before the request: no value outlives its request
// (not in a variable, the DOM or storage), and none comes back (the API answers names only). The
// management plane takes admin keys only (an account's key may not write credentials), so with an
// account's key the panel says so and asks for nothing.

/** Whether a key of this kind may manage credentials (the management plane's rule). */
export function mayManageCredentials(kind) {
  return kind === 'admin' || kind === 'trusted';
}

/** The management paths of one scope's set: the account's (`user` undefined) or one user's. */
export function credentialsPath(account, user) {
  const base = `/v1/admin/accounts/${encodeURIComponent(account)}`;
  return user === undefined ? `${base}/credentials` : `${base}/users/${encodeURIComponent(user)}/credentials`;
}

export class CredentialsView {
  /**
   * `root` is the panel; `api(method, path, body)` calls the gateway; `account()` is the account acted for,
   * `user()` the user submitted as, `canManage()` whether the key may manage credentials.
   */
  constructor(root, { api, account, user, canManage, onNotice }) {
    this.root = root;
    this.api = api;
    this.account = account;
    this.user = user;
    this.canManage = canManage;
    this.onNotice = onNotice;
    this.reads = 0;
    this.$ = (id) => root.querySelector(`#${id}`);
    this.$('credential-form').addEventListener('submit', (event) => {
      event.preventDefault();
      void this.save();
    });
    this.$('reload-credentials').addEventListener('click', () => void this.load());
  }

  clear() {
    this.reads += 1;
    this.$('credentials-body').hidden = true;
    this.$('account-credentials').replaceChildren();
    this.$('user-credentials').replaceChildren();
    this.$('credential-value').value = '';
    this.$('credentials-note').textContent = '';
  }

  async load() {
    const read = ++this.reads;
    const manage = this.canManage();
    this.$('credentials-body').hidden = !manage;
    if (!manage) {
      this.$('credentials-note').textContent =
        'Credentials are managed through the management plane: use an admin key acting for the account.';
      return;
    }
    const account = this.account();
    const user = this.user();
    if (!account) {
      this.$('credentials-note').textContent = 'Name the account to act for first.';
      return;
    }
    this.$('credentials-note').textContent = `Account ${account}; user ${user}. Values are never shown.`;
    this.$('user-credentials-heading').textContent = `User ${user}`;
    this.$('credential-scope-user').textContent = `user ${user}`;
    try {
      const [accountSet, userSet] = await Promise.all([
        this.api('GET', credentialsPath(account)),
        this.api('GET', credentialsPath(account, user)),
      ]);
      if (read !== this.reads) return;
      this.$('account-credentials').replaceChildren(
        ...this.items(accountSet.names, undefined, (name) => `Delete account credential ${name}`),
      );
      this.$('user-credentials').replaceChildren(
        ...this.items(userSet.names, user, (name) => `Delete credential ${name} of user ${user}`),
      );
    } catch (error) {
      this.onNotice(`Credentials could not be loaded: ${error.message}`);
    }
  }

  /** One list item per name with its Delete button; `deleteLabel(name)` names the button for screen readers. */
  items(names, user, deleteLabel) {
    if (names.length === 0) {
      const none = document.createElement('li');
      none.className = 'hint';
      none.textContent = 'none';
      return [none];
    }
    return [...names].sort().map((name) => {
      const item = document.createElement('li');
      item.dataset.name = name;
      const label = document.createElement('span');
      label.className = 'mono';
      label.textContent = name;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.textContent = 'Delete';
      remove.setAttribute('aria-label', deleteLabel(name));
      remove.addEventListener('click', () => void this.remove(name, user));
      item.append(label, ' ', remove);
      return item;
    });
  }

  async save() {
    const nameBox = this.$('credential-name');
    const valueBox = this.$('credential-value');
    const name = nameBox.value.trim();
    const forUser = this.$('credential-scope').value === 'user';
    const user = forUser ? this.user() : undefined;
    const account = this.account();
    // The value leaves the box before the call: whatever happens next, it is not left on the page.
    const value = valueBox.value;
    valueBox.value = '';
    if (!name || !value) {
      this.onNotice('Name the credential and type its value.');
      return;
    }
    try {
      await this.api('PUT', `${credentialsPath(account, user)}/${encodeURIComponent(name)}`, { value });
      nameBox.value = '';
      this.onNotice(
        forUser ? `Credential ${name} stored for user ${user}.` : `Account credential ${name} stored.`,
      );
      await this.load();
    } catch (error) {
      this.onNotice(`The credential was not stored: ${error.message}`);
    }
  }

  async remove(name, user) {
    try {
      await this.api('DELETE', `${credentialsPath(this.account(), user)}/${encodeURIComponent(name)}`);
      this.onNotice(
        user === undefined
          ? `Account credential ${name} deleted.`
          : `Credential ${name} of user ${user} deleted.`,
      );
      await this.load();
      this.$('reload-credentials').focus();
    } catch (error) {
      this.onNotice(`The credential was not deleted: ${error.message}`);
    }
  }
}
